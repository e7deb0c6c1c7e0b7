package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fingerprinting a file (what {@code xlac hash}, {@code cache add} and {@code parallel-compile}
 * do before their first graph) loads no protobuf descriptors and no generated message classes:
 * those took about 120 ms of every cold start. Checked in a fresh JVM, since this one has loaded
 * them long ago.
 */
class FingerprintClassLoadingTest {
  private static final Path GOLDEN = Path.of("src/test/resources/golden");

  /**
   * The one protobuf class the path still loads: the wire readers report malformed data with
   * protobuf-java's exception (and its messages), so its class is loaded when the readers are
   * linked. It is a plain IOException subclass; it pulls in nothing else of protobuf.
   */
  private static final Set<String> ALLOWED_PROTOBUF = Set.of("com.google.protobuf.InvalidProtocolBufferException");

  /** The fresh JVM's main: reads the files as {@code xlac hash} does and prints their fingerprints. */
  public static final class Main {
    public static void main(String[] args) throws InterruptedException {
      List<Path> files = new ArrayList<>();
      for (String a : args) {
        files.add(Path.of(a));
      }
      for (HloBatchReader.Outcome<String> o : HloBatchReader.withDefaults().read(files,
          m -> m.fingerprint() + " " + m.moduleName() + " " + m.kind())) {
        System.out.println(o.ok() ? o.value() : "error: " + o.error().getMessage());
      }
    }
  }

  @Test
  void fingerprintingFiles_loadsNoProtobufDescriptorsOrMessageClasses(@TempDir Path tmp)
      throws IOException, InterruptedException {
    List<Path> files = List.of(
        GOLDEN.resolve("mlp_run1/module_0000.jit_stage.before_optimizations.hlo.pb"),
        GOLDEN.resolve("gz/module_0048.jit_train_step.before_optimizations.hlo.pb.gz"),
        firstFile(GOLDEN.resolve("snapshot")));
    Path log = tmp.resolve("classes.txt");
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xlog:class+load=info:file=" + log, "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    for (Path f : files) {
      cmd.add(f.toString());
    }
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();

    // The child really fingerprinted every file, with the same result as this JVM.
    HloModuleReader reader = new HloModuleReader();
    for (Path f : files) {
      LoadedModule m = reader.read(f);
      assertThat(out).contains(m.fingerprint() + " " + m.moduleName() + " " + m.kind());
    }
    List<String> loaded = Files.readAllLines(log).stream()
        .map(l -> l.replaceFirst("^\\[[^]]*\\]\\[[^]]*\\]\\[[^]]*\\] ", "").replaceFirst(" .*", ""))
        .toList();
    assertThat(loaded).as("the log lists the classes the child loaded")
        .contains("dev.xlac.hlo.WireSchema", "dev.xlac.hlo.HloWireIndex", "dev.xlac.hlo.CanonicalWireEncoder");
    assertThat(loaded).filteredOn(c -> c.startsWith("dev.xlac.hlo.proto.")).as("generated message classes").isEmpty();
    assertThat(loaded).filteredOn(c -> c.startsWith("com.google.protobuf.")).as("protobuf classes")
        .isSubsetOf(ALLOWED_PROTOBUF);
  }

  private static Path firstFile(Path dir) throws IOException {
    try (var s = Files.list(dir)) {
      return s.filter(Files::isRegularFile).filter(f -> f.getFileName().toString().endsWith(".pb")).sorted()
          .findFirst().orElseThrow();
    }
  }
}
