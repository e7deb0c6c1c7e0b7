package dev.xlac.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {
  @Test
  void seconds_keepsTheNanoseconds() {
    assertThat(Durations.seconds(Duration.ofMillis(1500))).isEqualTo(1.5);
    assertThat(Durations.seconds(Duration.ofSeconds(3, 1))).isEqualTo(3.000000001);
    assertThat(Durations.seconds(Duration.ZERO)).isZero();
  }

  @Test
  void round_isToTheNearestMillisecond() {
    assertThat(Durations.round(Durations.seconds(Duration.ofNanos(1_234_567_890)))).isEqualTo(1.235);
    assertThat(Durations.round(Durations.seconds(Duration.ofMillis(1500)))).isEqualTo(1.5);
    assertThat(Durations.round(Durations.seconds(Duration.ofNanos(1_499_000)))).isEqualTo(0.001);
    assertThat(Durations.round(Durations.seconds(Duration.ofNanos(499_000)))).isZero();
    assertThat(Durations.round(Durations.seconds(Duration.ofMinutes(90)))).isEqualTo(5400.0);
  }
}
