package dev.xlac.core.os;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class OutputTailTest {
  private static OutputTail drained(String text, int limit) throws InterruptedException {
    OutputTail tail = OutputTail.drain(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), limit,
        "output-tail-test");
    assertThat(tail.join(Duration.ofSeconds(30))).isTrue();
    return tail;
  }

  @Test
  void text_underTheLimit_isAllOfIt() throws Exception {
    assertThat(drained("line 1\nline 2\n", 64).text()).isEqualTo("line 1\nline 2\n");
    assertThat(drained("", 64).text()).isEmpty();
    assertThat(drained("exactly8", 8).text()).isEqualTo("exactly8");
  }

  @Test
  void text_overTheLimit_isTheLastBytes_headedByHowManyWereLeftOut() throws Exception {
    String out = "x".repeat(20_000) + "the end\n";
    assertThat(drained(out, 100).text())
        .isEqualTo("[... first " + (out.length() - 100) + " bytes left out ...]\n" + out.substring(out.length() - 100));
  }

  @Test
  void text_ofAChildProcess_isWhatItWrote() throws Exception {
    Process p = new ProcessBuilder("sh", "-c", "echo to stdout; echo to stderr >&2").redirectErrorStream(true).start();
    OutputTail tail = OutputTail.drain(p.getInputStream(), 1024, "output-tail-test-child");
    p.waitFor();
    assertThat(tail.join(Duration.ofSeconds(30))).isTrue();
    assertThat(tail.text()).isEqualTo("to stdout\nto stderr\n");
  }

  @Test
  void clear_forgetsWhatWasKept_whileTheDrainGoesOn() throws Exception {
    PipedOutputStream writer = new PipedOutputStream();
    OutputTail tail = OutputTail.drain(new PipedInputStream(writer), 16, "output-tail-test-pipe");
    writer.write("a long first request's output\n".getBytes(StandardCharsets.UTF_8));
    writer.flush();
    awaitText(tail, "output\n");
    tail.clear();
    assertThat(tail.text()).isEmpty();
    writer.write("second\n".getBytes(StandardCharsets.UTF_8));
    writer.flush();
    awaitText(tail, "second\n");
    assertThat(tail.text()).isEqualTo("second\n");
    writer.close();
    assertThat(tail.join(Duration.ofSeconds(30))).isTrue();
  }

  @Test
  void join_isBounded_whileTheStreamStaysOpen() throws Exception {
    PipedOutputStream writer = new PipedOutputStream();
    OutputTail tail = OutputTail.drain(new PipedInputStream(writer), 16, "output-tail-test-open");
    assertThat(tail.join(Duration.ofMillis(100))).isFalse();
    writer.close();
    assertThat(tail.join(Duration.ofSeconds(30))).isTrue();
  }

  private static void awaitText(OutputTail tail, String end) throws InterruptedException {
    for (int i = 0; i < 3000 && !tail.text().endsWith(end); i++) {
      Thread.sleep(10);
    }
    assertThat(tail.text()).endsWith(end);
  }

  @Test
  void aReadError_keepsWhatWasRead() throws Exception {
    var failing = new java.io.InputStream() {
      int n;

      @Override
      public int read() throws IOException {
        if (n < 3) {
          return "abc".charAt(n++);
        }
        throw new IOException("the process is gone");
      }
    };
    OutputTail tail = OutputTail.drain(failing, 16, "output-tail-test-error");
    assertThat(tail.join(Duration.ofSeconds(30))).isTrue();
    assertThat(tail.text()).isEqualTo("abc");
  }
}
