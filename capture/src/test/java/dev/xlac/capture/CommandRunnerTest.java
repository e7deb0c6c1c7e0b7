package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real child processes under {@link CommandRunner}: what {@code xlac run} passes through. */
class CommandRunnerTest {
  @TempDir
  Path tmp;

  private static Map<String, String> env(String... kv) {
    Map<String, String> m = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void exitStatus_isTheCommands_128PlusNForASignal() throws Exception {
    assertThat(CommandRunner.run(List.of("sh", "-c", "exit 7"), env()).exitStatus()).isEqualTo(7);
    assertThat(CommandRunner.run(List.of("sh", "-c", "kill -TERM $$"), env()).exitStatus()).isEqualTo(128 + 15);
  }

  @Test
  void environment_isExactlyTheOneGiven() throws Exception {
    Path out = tmp.resolve("env.txt");
    CommandRunner.run(List.of("sh", "-c", "env > " + out), env("XLAC_PJRT_LAYOUT", "/x/y"));
    List<String> lines = Files.readAllLines(out);
    assertThat(lines).contains("XLAC_PJRT_LAYOUT=/x/y");
    assertThat(lines).noneMatch(l -> l.startsWith("HOME=")); // not given, so not inherited
  }

  @Test
  void theCommand_runsInAProcessGroupOfItsOwn() throws Exception {
    Path out = tmp.resolve("pgid.txt");
    CommandRunner.run(List.of("sh", "-c", "ps -o pgid= -p $$ > " + out + "; echo $$ >> " + out), env());
    List<String> lines = Files.readAllLines(out);
    assertThat(lines.get(0).trim()).as("its pid leads its group").isEqualTo(lines.get(1).trim());
  }

  @Test
  void missingOrUnrunnableCommand_is127or126() throws Exception {
    assertThatThrownBy(() -> CommandRunner.run(List.of("no-such-command-xlac"), env()))
        .isInstanceOfSatisfying(CommandNotRunnableException.class, e -> assertThat(e.status()).isEqualTo(127));
    Path notExecutable = Files.writeString(tmp.resolve("script.sh"), "echo hi\n");
    assertThatThrownBy(() -> CommandRunner.run(List.of(notExecutable.toString()), env()))
        .isInstanceOfSatisfying(CommandNotRunnableException.class, e -> assertThat(e.status()).isEqualTo(126));
  }
}
