package dev.xlac.cli.compile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.TestModules;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

class ProgressPrinterTest {
  private static final CompileJob JOB = new CompileJob(GraphFingerprint.of(TestModules.mulAdd(2f)), "jit_step",
      () -> TestModules.mulAdd(2f).toByteArray());

  private static boolean clockRunning() {
    return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("xlac-progress") && t.isAlive());
  }

  @Test
  void close_stopsTheClock_endsTheLine_andNothingIsDrawnAfterIt() throws Exception {
    StringWriter text = new StringWriter();
    ProgressPrinter p = new ProgressPrinter(new PrintWriter(text, true), true);
    p.planned(2, 0, 2, 1);
    p.submitted(JOB);
    assertThat(clockRunning()).isTrue();
    assertThat(text.toString()).contains("0/1 done");
    p.close();
    String atClose = text.toString();
    assertThat(atClose).endsWith(System.lineSeparator());

    p.submitted(JOB); // a job from another thread, late: no live line after the end
    p.streaming("python train.py", 1); // nor a clock started after close
    Thread.sleep(1_200); // past the clock's first tick
    assertThat(text.toString().substring(atClose.length())).doesNotContain(" done").doesNotContain("\r");
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (clockRunning() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(clockRunning()).isFalse();
    p.close(); // twice is fine
  }
}
