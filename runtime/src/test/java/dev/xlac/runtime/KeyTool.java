package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The C side's key functions, through {@code target/native-test/xlac-pjrt-key} (built by {@code make tools},
 * which Maven runs before the tests).
 */
final class KeyTool {
  static final Path TOOL = Path.of("target", "native-test", "xlac-pjrt-key").toAbsolutePath();

  private KeyTool() {}

  static String run(String... args) throws IOException, InterruptedException {
    assertThat(TOOL).as("the C key tool; build it with `make tools` in runtime/ (mvn does in test-compile)")
        .isExecutable();
    List<String> cmd = new ArrayList<>();
    cmd.add(TOOL.toString());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    byte[] out = p.getInputStream().readAllBytes();
    assertThat(p.waitFor()).as("exit status of %s", cmd).isZero();
    return new String(out, StandardCharsets.UTF_8);
  }

  static String canonicalHex(Path dir, byte[] options) throws IOException, InterruptedException {
    Path f = Files.createTempFile(dir, "options", ".bin");
    Files.write(f, options);
    return run("canonical", f.toString()).strip();
  }

  static String key(Path dir, String format, byte[] program, byte[] options, String identity)
      throws IOException, InterruptedException {
    Path p = Files.write(Files.createTempFile(dir, "program", ".bin"), program);
    Path o = Files.write(Files.createTempFile(dir, "options", ".bin"), options);
    Path i = Files.writeString(Files.createTempFile(dir, "identity", ".txt"), identity);
    return run("key", format, p.toString(), o.toString(), i.toString()).strip();
  }
}
