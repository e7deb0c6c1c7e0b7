package dev.xlac.compiler.pjrt;

import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The real JAX dumps the PJRT tests compile: every distinct graph (by fingerprint) among the
 * {@code *.before_optimizations.hlo.pb} files of the hlo test-jar's {@code golden/} fixtures.
 */
public final class GoldenModules {
  private static final String SUFFIX = ".before_optimizations.hlo.pb";

  private GoldenModules() {}

  public static List<LoadedModule> all() {
    java.util.Map<dev.xlac.hlo.GraphFingerprint, LoadedModule> distinct = new java.util.TreeMap<>();
    HloModuleReader reader = new HloModuleReader();
    try (Stream<Path> walk = Files.walk(dev.xlac.hlo.TestModules.golden("mlp_run1").getParent())) {
      for (Path p : (Iterable<Path>) walk.filter(f -> f.getFileName().toString().endsWith(SUFFIX)).sorted()::iterator) {
        LoadedModule m = reader.read(p);
        distinct.putIfAbsent(m.fingerprint(), m);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<LoadedModule> out = new ArrayList<>(distinct.values());
    out.sort(Comparator.comparing(m -> m.file().toString()));
    return out;
  }

  public static LoadedModule named(String moduleName) {
    return all().stream().filter(m -> m.moduleName().equals(moduleName)).findFirst()
        .orElseThrow(() -> new IllegalStateException("no test module named " + moduleName));
  }
}
