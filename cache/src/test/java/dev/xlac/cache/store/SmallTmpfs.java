package dev.xlac.cache.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A real, small tmpfs for the disk-full tests: mounted in a private mount namespace of an
 * unprivileged user namespace ({@code unshare -Urm}) that a sleeping process holds open; child
 * processes enter it with {@code nsenter}. Nobody else sees it, and it goes with the holder.
 * {@link #mount} returns null, with the reason, where that cannot be done.
 */
final class SmallTmpfs implements AutoCloseable {
  final Path dir;
  private final Process holder;

  private SmallTmpfs(Path dir, Process holder) {
    this.dir = dir;
    this.holder = holder;
  }

  /** Mounts a tmpfs of {@code bytes} on {@code dir}; null (and the reason in {@code whyNot}) when it cannot be done. */
  static SmallTmpfs mount(Path dir, long bytes, StringBuilder whyNot) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Process p;
    try {
      p = new ProcessBuilder("unshare", "-Urm", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs -o size=" + bytes + " xlac-test \"$0\" && echo mounted && exec sleep 600", dir.toString())
          .redirectErrorStream(true).start();
    } catch (IOException e) {
      whyNot.append("cannot run unshare: ").append(e.getMessage());
      return null;
    }
    CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> {
      try {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
      } catch (IOException e) {
        return null;
      }
    });
    String line;
    try {
      line = first.get(20, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      line = null;
    }
    if (!"mounted".equals(line)) {
      p.destroyForcibly();
      whyNot.append("unshare -Urm + mount -t tmpfs failed (unprivileged user namespaces not allowed?): ").append(line);
      return null;
    }
    return new SmallTmpfs(dir, p);
  }

  /** The command line prefix that runs a command inside the namespace, where the tmpfs is. */
  List<String> wrapper() {
    return new ArrayList<>(List.of("nsenter", "-t", Long.toString(holder.pid()), "-U", "-m",
        "--preserve-credentials", "--"));
  }

  /** Free bytes on the tmpfs, as df inside the namespace says. */
  long freeBytes() throws IOException, InterruptedException {
    List<String> cmd = wrapper();
    cmd.addAll(List.of("df", "-P", "-B1", dir.toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(30, TimeUnit.SECONDS);
    String[] f = out.lines().skip(1).findFirst().orElseThrow(() -> new IOException("df: " + out)).trim().split("\\s+");
    return Long.parseLong(f[3]);
  }

  @Override
  public void close() throws InterruptedException {
    holder.destroyForcibly();
    holder.waitFor(10, TimeUnit.SECONDS);
  }
}
