package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TablesTest {

  private static String reference(Instant t) {
    return t.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  @Test
  void iso_isInstantsOwnFormTruncatedToSeconds_atTheEdges() {
    for (String s : new String[] {"1970-01-01T00:00:00Z", "1970-01-01T00:00:00.999Z", "1999-12-31T23:59:59.5Z",
        "2000-02-29T12:00:00Z", "2024-02-29T23:59:59Z", "2100-03-01T00:00:00Z", "2026-11-21T08:20:07.123456789Z",
        "9999-12-31T23:59:59.999Z", "+10000-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "1900-01-01T00:00:00Z"}) {
      Instant t = Instant.parse(s);
      assertThat(Tables.iso(t)).as(s).isEqualTo(reference(t));
    }
  }

  @Test
  void iso_agreesWithInstant_on100000RandomTimes() {
    SplittableRandom r = new SplittableRandom(7);
    for (int i = 0; i < 100_000; i++) {
      Instant t = Instant.ofEpochSecond(r.nextLong(-5_000_000_000L, 300_000_000_000L), r.nextInt(1_000_000_000));
      assertThat(Tables.iso(t)).isEqualTo(reference(t));
    }
  }
}
