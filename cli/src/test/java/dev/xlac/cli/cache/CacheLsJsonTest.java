package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListRow;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.Json;
import dev.xlac.hlo.GraphFingerprint;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@code ls --json} writes rows by hand for speed; it must stay byte-identical to the house writer. */
class CacheLsJsonTest {
  static final CompilerIdentity CPU = new CompilerIdentity("pjrt", "0.10.2", "cpu", List.of(), Map.of());

  /** The documented objects, written by {@link Json}: the reference. */
  static String reference(List<ListRow> rows) {
    List<Map<String, Object>> objects = new ArrayList<>();
    for (ListRow r : rows) {
      boolean pending = r.status() == EntryStatus.PENDING;
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("fingerprint", r.fingerprint().value());
      m.put("module", r.module() == null ? "" : r.module());
      m.put("status", r.status().jsonName());
      m.put("compiler", r.compilerName());
      m.put("artifact_bytes", pending ? null : r.artifactBytes());
      m.put("hlo_bytes", r.hloBytes());
      m.put("compile_seconds", pending ? null : r.compileTime().toMillis() / 1000.0);
      m.put("last_access", r.lastAccess().truncatedTo(ChronoUnit.SECONDS).toString());
      objects.add(m);
    }
    return Json.write(objects) + System.lineSeparator();
  }

  static String written(List<ListRow> rows) {
    StringWriter s = new StringWriter();
    try (PrintWriter out = new PrintWriter(s)) {
      CacheLsCommand.writeJson(rows, out);
    }
    return s.toString();
  }

  static ListRow row(Random random, String module, EntryStatus status, Duration compile, Instant access) {
    byte[] fp = new byte[32];
    random.nextBytes(fp);
    byte[] cid = new byte[32];
    random.nextBytes(cid);
    boolean pending = status == EntryStatus.PENDING;
    String digest = pending ? null : HexFormat.of().formatHex(cid);
    CompilerIdentity id = pending || random.nextBoolean() ? null : CPU; // null: an identity record that is missing
    return new ListRow(new GraphFingerprint("hlo1:" + HexFormat.of().formatHex(fp)), module, status, digest, id,
        status == EntryStatus.COMPILED ? random.nextLong(1L << 40) : 0, random.nextInt(1 << 30), compile,
        access.minusSeconds(60), access);
  }

  @Test
  void writeJson_isByteIdenticalToTheHouseWriter_onAwkwardRows() {
    Random random = new Random(Long.getLong("xlac.test.seed", System.nanoTime()));
    List<ListRow> rows = new ArrayList<>();
    List<String> modules = new ArrayList<>(List.of("jit_step", "", "quote\" back\\slash", "tab\tnl\nnul\0esc\u001b",
        "ünïcödé 模块 \uD83D\uDE80"));
    modules.add(null);
    List<Duration> compiles = List.of(Duration.ZERO, Duration.ofMillis(1), Duration.ofMillis(250), Duration.ofMillis(1999),
        Duration.ofSeconds(842, 3_000_000), Duration.ofDays(200), Duration.ofMillis(123_456_789_012L));
    List<Instant> times = new ArrayList<>(List.of(Instant.EPOCH, Instant.ofEpochMilli(-1), Instant.ofEpochSecond(-86_401),
        Instant.parse("1999-12-31T23:59:59.999Z"), Instant.parse("2000-02-29T00:00:00Z"),
        Instant.parse("9999-12-31T23:59:59.5Z"), Instant.parse("+10000-01-01T00:00:00Z")));
    for (int i = 0; i < 200; i++) {
      times.add(Instant.ofEpochMilli(random.nextLong(4_102_444_800_000L))); // 1970-2100, milliseconds set
    }
    for (Instant t : times) {
      for (EntryStatus status : EntryStatus.values()) {
        rows.add(row(random, modules.get(random.nextInt(modules.size())), status,
            compiles.get(random.nextInt(compiles.size())), t));
      }
    }
    assertThat(written(rows)).isEqualTo(reference(rows));
    assertThat(written(rows.subList(0, 1))).isEqualTo(reference(rows.subList(0, 1)));
    assertThat(written(List.of())).isEqualTo(reference(List.of()));
  }

  @Test
  void writeJson_handsOverLargeListingsInChunks_withoutLosingAnyText() {
    Random random = new Random(7);
    List<ListRow> rows = new ArrayList<>();
    Instant t = Instant.parse("2026-11-21T06:00:00.123Z");
    for (int i = 0; i < 3000; i++) { // about 1 MB of text: several 64 KiB chunks
      rows.add(row(random, "jit_" + i, EntryStatus.values()[i % 3], Duration.ofMillis(i), t.plusSeconds(i * 37L)));
    }
    assertThat(written(rows)).isEqualTo(reference(rows));
  }
}
