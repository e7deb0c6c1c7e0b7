package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.core.CompilerIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The identity records of {@link IsolatedPjrtDrivers}, with the C test plugin. */
class ProbeRecordTest {
  @TempDir
  Path temp;

  private static IsolatedPjrtDrivers drivers(List<Path> probeDirs) {
    return new IsolatedPjrtDrivers(TestPluginBuild.library(), Map.of(), PjrtCompileOptions.DEFAULT,
        Duration.ofMinutes(1), probeDirs);
  }

  private static List<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).toList();
    }
  }

  @Test
  void aProbeDirectoryThatCannotBeWritten_isOnlyAMissedShortcut() throws Exception {
    Path blocked = Files.writeString(temp.resolve("blocked"), "a file where a directory should be");
    Path probes = temp.resolve("probes");
    CompilerIdentity asked;
    try (IsolatedPjrtDrivers d = drivers(List.of(blocked.resolve("probes"), probes))) {
      assertThat(d.identityFromRecord()).isFalse();
      asked = d.identity();
    }
    // The other directory got the record, whole and alone (no temporary left beside it).
    assertThat(names(probes)).singleElement().asString().startsWith("pjrt-").endsWith(".identity");
    try (IsolatedPjrtDrivers again = drivers(List.of(blocked.resolve("probes"), probes))) {
      assertThat(again.identityFromRecord()).isTrue();
      assertThat(again.identity()).isEqualTo(asked);
    }
  }

  @Test
  void aRecordIsReplacedWhole() throws Exception {
    Path probes = temp.resolve("probes");
    CompilerIdentity asked;
    try (IsolatedPjrtDrivers d = drivers(List.of(probes))) {
      asked = d.identity();
    }
    Path record = probes.resolve(names(probes).getFirst());
    Files.writeString(record, "damaged");
    try (IsolatedPjrtDrivers d = drivers(List.of(probes))) {
      assertThat(d.identityFromRecord()).isFalse(); // a damaged record is asked again, and rewritten
    }
    assertThat(names(probes)).containsExactly(record.getFileName().toString());
    assertThat(CompilerIdentity.decode(Files.readString(record))).isEqualTo(asked);
  }
}
