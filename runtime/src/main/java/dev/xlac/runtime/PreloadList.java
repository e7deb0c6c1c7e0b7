package dev.xlac.runtime;

import dev.xlac.core.io.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;

/**
 * The keys the previous run of a command requested, in order, which the proxy loads ahead in the next one
 * ({@code runtime/README.md}, "Loading ahead"): {@code LAYOUT/preload/<sha256 of the working directory and the
 * command's words>.keys}, named to the proxy by {@link #VARIABLE}. Text: the line {@value #FIRST_LINE}, then one
 * {@code pjrt1:<hex>} line per key, at most {@value #MAX_KEYS}.
 */
public final class PreloadList {
  /** The proxy's variable naming the list. */
  public static final String VARIABLE = "XLAC_PJRT_PRELOAD";
  static final String DIRECTORY = "preload";
  static final String FIRST_LINE = "xlac-preload 1";
  /** The most keys the proxy reads from a list (preload.h). */
  public static final int MAX_KEYS = 4096;

  private PreloadList() {}

  /** The list of the command {@code command} run in {@code cwd}, in {@code layout}. */
  public static Path file(Path layout, Path cwd, List<String> command) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update("xlac-preload-command/1".getBytes(StandardCharsets.UTF_8));
      sha.update((byte) 0);
      sha.update(cwd.toAbsolutePath().normalize().toString().getBytes(StandardCharsets.UTF_8));
      sha.update((byte) 0);
      for (String word : command) {
        sha.update(word.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
      }
      return layout.resolve(DIRECTORY).resolve(HexFormat.of().formatHex(sha.digest()) + ".keys");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The list's text for {@code keys} (duplicates dropped, cut at {@link #MAX_KEYS}). */
  public static String text(List<RequestKey> keys) {
    StringBuilder b = new StringBuilder(FIRST_LINE).append('\n');
    new LinkedHashSet<>(keys).stream().limit(MAX_KEYS).forEach(k -> b.append(k.text()).append('\n'));
    return b.toString();
  }

  /**
   * Writes the list of {@code keys} to {@code file} (atomically, a private file in a private directory), unless it
   * holds them already or there are none; whether it wrote. The caller holds the cache's lock, as for the rest of the
   * layout.
   */
  public static boolean write(Path file, List<RequestKey> keys) throws IOException {
    if (keys.isEmpty()) {
      return false;
    }
    String text = text(keys);
    if (read(file).map(text::equals).orElse(false)) {
      return false;
    }
    PrivateFiles.createDirectories(file.getParent());
    PrivateFiles.writeString(file, text);
    return true;
  }

  /** The keys of the list in {@code file}, in order; empty when there is no such file or it is not a list. */
  public static Optional<List<RequestKey>> keys(Path file) throws IOException {
    Optional<String> text = read(file);
    if (text.isEmpty()) {
      return Optional.empty();
    }
    List<String> lines = text.get().lines().toList();
    if (lines.isEmpty() || !lines.getFirst().equals(FIRST_LINE)) {
      return Optional.empty();
    }
    List<RequestKey> keys = new ArrayList<>();
    try {
      lines.stream().skip(1).forEach(l -> keys.add(RequestKey.parse(l)));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    return Optional.of(keys);
  }

  private static Optional<String> read(Path file) throws IOException {
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return Optional.empty();
    }
    return Optional.of(Files.readString(file, StandardCharsets.UTF_8));
  }
}
