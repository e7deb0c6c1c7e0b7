package dev.xlac.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QuantitiesTest {
  @Test
  void sizes_followCcache_decimalAndBinarySuffixes() {
    assertThat(Quantities.parseSize("50G")).isEqualTo(50_000_000_000L);
    assertThat(Quantities.parseSize("2GiB")).isEqualTo(2L << 30);
    assertThat(Quantities.parseSize("1.5M")).isEqualTo(1_500_000L);
    assertThat(Quantities.parseSize("4096")).isEqualTo(4096);
    assertThatThrownBy(() -> Quantities.parseSize("lots")).hasMessageContaining("not a size: 'lots'");
  }

  @Test
  void durations_acceptUnitsAndIso() {
    assertThat(Quantities.parseDuration("1h30m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(Quantities.parseDuration("7d")).isEqualTo(Duration.ofDays(7));
    assertThat(Quantities.parseDuration("2w")).isEqualTo(Duration.ofDays(14));
    assertThat(Quantities.parseDuration("PT2H")).isEqualTo(Duration.ofHours(2));
    assertThatThrownBy(() -> Quantities.parseDuration("10 parsecs")).hasMessageContaining("not a duration");
    assertThat(Quantities.human(Duration.ofSeconds(7385))).isEqualTo("2h 03m");
  }

  /** Issue #10: these gave NumberFormatException and ArithmeticException, which picocli printed with their class names. */
  @Test
  void durationsTooLongForJava_areRefusedInWords() {
    for (String text : new String[] {"99999999999999999999s", "999999999999999999w", "9223372036854775807s",
        "PT9223372036854775807S"}) {
      assertThatThrownBy(() -> Quantities.parseDuration(text)).as(text).isExactlyInstanceOf(IllegalArgumentException.class)
          .hasMessage("duration too long: '" + text + "'");
    }
  }

  @Test
  void location_isOptionThenEnvironmentThenHome() {
    Path home = Path.of("/home/u");
    assertThat(CacheLocation.resolve(Path.of("/c"), Map.of(CacheLocation.ENV, "/e"), home)).isEqualTo(Path.of("/c"));
    assertThat(CacheLocation.resolve(null, Map.of(CacheLocation.ENV, "/e"), home)).isEqualTo(Path.of("/e"));
    assertThat(CacheLocation.resolve(null, Map.of(), home)).isEqualTo(Path.of("/home/u/.cache/xlac"));
  }

  @Test
  void cacheLocation_followsAnAbsoluteXdgCacheHome() {
    Path home = Path.of("/home/u");
    assertThat(CacheLocation.resolve(null, Map.of("XDG_CACHE_HOME", "/x/cache"), home)).isEqualTo(Path.of("/x/cache/xlac"));
    assertThat(CacheLocation.resolve(null, Map.of("XDG_CACHE_HOME", "rel"), home)).isEqualTo(Path.of("/home/u/.cache/xlac"));
    assertThat(CacheLocation.resolve(null, Map.of(CacheLocation.ENV, "/e", "XDG_CACHE_HOME", "/x"), home))
        .isEqualTo(Path.of("/e"));
  }
}
