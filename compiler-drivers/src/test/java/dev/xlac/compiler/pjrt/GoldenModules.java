package dev.xlac.compiler.pjrt;

import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The real JAX dumps the PJRT tests compile: this module's {@code jax/} resources plus whatever the
 * hlo test-jar carries under {@code golden/}, each {@code *.before_optimizations.hlo.pb}.
 */
final class GoldenModules {
  private static final String SUFFIX = ".before_optimizations.hlo.pb";

  private GoldenModules() {}

  static List<LoadedModule> all() {
    List<LoadedModule> out = new ArrayList<>();
    HloModuleReader reader = new HloModuleReader();
    for (String root : List.of("jax", "golden")) {
      for (Path file : files(root)) {
        out.add(reader.read(file));
      }
    }
    out.sort(Comparator.comparing(m -> m.file().toString()));
    return out;
  }

  static LoadedModule named(String moduleName) {
    return all().stream().filter(m -> m.moduleName().equals(moduleName)).findFirst()
        .orElseThrow(() -> new IllegalStateException("no test module named " + moduleName));
  }

  private static List<Path> files(String root) {
    List<Path> found = new ArrayList<>();
    try {
      for (URL url : Collections.list(GoldenModules.class.getClassLoader().getResources(root))) {
        Path dir = toPath(url.toURI());
        try (Stream<Path> walk = Files.walk(dir)) {
          walk.filter(p -> p.getFileName() != null && p.getFileName().toString().endsWith(SUFFIX))
              .forEach(found::add);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    return found;
  }

  private static Path toPath(URI uri) throws IOException {
    if (!uri.getScheme().equals("jar")) {
      return Path.of(uri);
    }
    FileSystem fs;
    try {
      fs = FileSystems.newFileSystem(uri, Map.of());
    } catch (FileSystemAlreadyExistsException e) {
      fs = FileSystems.getFileSystem(uri);
    }
    return fs.provider().getPath(uri);
  }
}
