package dev.xlac.runtime;

import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the proxy did in one run, summed over every process's {@code stats-<pid>.tsv} in
 * {@code $XLAC_PJRT_STATS} (format: {@code runtime/README.md}, "Run statistics").
 *
 * @param compiles every compile the proxy saw: hits + misses + fallbacks
 * @param hits compiles served from the layout
 * @param misses compiles whose key was not in the layout (compiled by the real plugin)
 * @param fallbacks compiles where the proxy failed on its side and the real plugin compiled instead
 * @param recorded requests written to the record spool
 * @param unrecorded requests that could not be written to the spool
 * @param compileTime time the real plugin spent compiling in this run (misses and fallbacks)
 * @param savedTime the original compile time of every hit: what serving them saved
 * @param hitsByKey hits per request key, in the order first seen
 * @param damagedKeys keys whose layout entry the proxy could not serve (a fallback with a key): the
 *     next materialize should write them again
 * @param fallbackReasons the distinct reasons of the fallbacks, in the order first seen
 * @param missLookupTime the proxy's own time on the misses (key and layout lookup): its overhead
 * @param missCompileTime the real plugin's compile time on the misses, to set the overhead against
 * @param serveTime the proxy's time on the hits (key, lookup, checksum and the real plugin's
 *     DeserializeAndLoad): what a served compile still costs, against the compile it replaces
 * @param missesByKey misses per request key, in the order first seen (their requests, for saying why each was
 *     not served, are {@code STATS/<hex>.xpr}: {@link #missRequests})
 * @param preloaded executables the proxy loaded ahead, before their compile request came (runtime/README.md,
 *     "Loading ahead")
 * @param preloadHits hits served by an executable loaded ahead
 * @param preloadHidden the load time of those hits that their requests did not wait for
 * @param requested every keyed request (hits, misses, keyed fallbacks) in the order first seen, the files of the
 *     processes taken in name order: what the next run of the command loads ahead
 */
public record RunStatistics(long compiles, long hits, long misses, long fallbacks, long recorded,
    long unrecorded, Duration compileTime, Duration savedTime, Map<RequestKey, Long> hitsByKey,
    Set<RequestKey> damagedKeys, List<String> fallbackReasons, Duration missLookupTime,
    Duration missCompileTime, Duration serveTime, Map<RequestKey, Long> missesByKey, long preloaded,
    long preloadHits, Duration preloadHidden, List<RequestKey> requested) {

  /** The prefix of every statistics file the proxy writes. */
  public static final String FILE_PREFIX = "stats-";

  public static final RunStatistics NONE = new RunStatistics(0, 0, 0, 0, 0, 0, Duration.ZERO, Duration.ZERO,
      Map.of(), Set.of(), List.of(), Duration.ZERO, Duration.ZERO, Duration.ZERO, Map.of(), 0, 0, Duration.ZERO,
      List.of());

  public RunStatistics {
    hitsByKey = Collections.unmodifiableMap(new LinkedHashMap<>(hitsByKey));
    damagedKeys = Collections.unmodifiableSet(new LinkedHashSet<>(damagedKeys));
    fallbackReasons = List.copyOf(fallbackReasons);
    missesByKey = Collections.unmodifiableMap(new LinkedHashMap<>(missesByKey));
    requested = List.copyOf(requested);
  }

  /** Executables loaded ahead that no request claimed: destroyed with their client, or with the process. */
  public long preloadWasted() {
    return Math.max(0, preloaded - preloadHits);
  }

  /**
   * The requests of the misses that the proxy kept in {@code statsDir} ({@code <hex>.xpr}: a record without its
   * executable, once per key), by key; a file that cannot be read as a whole record is left out (the miss's
   * reason is then unknown).
   */
  public static Map<RequestKey, RecordedRequest> missRequests(Path statsDir) {
    Map<RequestKey, RecordedRequest> out = new LinkedHashMap<>();
    if (!Files.isDirectory(statsDir)) {
      return out;
    }
    try {
      for (Path f : RecordSpool.files(statsDir)) {
        try {
          RecordedRequest r = RecordSpool.read(f);
          out.put(r.key(), r);
        } catch (IOException | RuntimeException e) {
          // left out: its miss is explained as unknown
        }
      }
    } catch (IOException e) {
      // none
    }
    return out;
  }

  /**
   * Reads every {@code stats-*.tsv} in {@code statsDir} (none, or no directory: {@link #NONE}). A
   * line that does not parse (a process killed in the middle of a write cannot make one, as each
   * line is one {@code write}, but a foreign file could) is an {@link XlacException} naming the file
   * and the line.
   */
  public static RunStatistics read(Path statsDir) throws IOException {
    if (!Files.isDirectory(statsDir)) {
      return NONE;
    }
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(statsDir, FILE_PREFIX + "*.tsv")) {
      ds.forEach(files::add);
    }
    Collections.sort(files);
    Builder b = new Builder();
    for (Path f : files) {
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i);
        if (line.isEmpty()) {
          continue;
        }
        try {
          b.add(line);
        } catch (IllegalArgumentException e) {
          throw XlacException.badInput("cannot read run statistics " + f + " line " + (i + 1) + ": "
              + e.getMessage());
        }
      }
    }
    return b.build();
  }

  /** The proxy's time on the misses as a percentage of their compile time; 0 without misses. */
  public double missOverheadPercent() {
    return missCompileTime.isZero() ? 0 : 100.0 * missLookupTime.toNanos() / missCompileTime.toNanos();
  }

  /** Sums statistics lines; package-private for tests. */
  static final class Builder {
    private long hits;
    private long misses;
    private long fallbacks;
    private long recorded;
    private long unrecorded;
    private long compileNanos;
    private long savedNanos;
    private long missLookupNanos;
    private long missCompileNanos;
    private long serveNanos;
    private final Map<RequestKey, Long> hitsByKey = new LinkedHashMap<>();
    private final Map<RequestKey, Long> missesByKey = new LinkedHashMap<>();
    private final Set<RequestKey> damaged = new LinkedHashSet<>();
    private final Set<String> reasons = new LinkedHashSet<>();
    private final Set<RequestKey> requested = new LinkedHashSet<>();
    private long preloaded;
    private long preloadHits;
    private long preloadHiddenNanos;

    void add(String line) {
      String[] f = line.split("\t", -1);
      switch (f[0]) {
        case "hit" -> {
          fields(f, 5);
          RequestKey key = key(f[1]);
          serveNanos += nonNegative(f[2]) + nonNegative(f[3]);
          savedNanos += nonNegative(f[4]);
          hits++;
          hitsByKey.merge(key, 1L, Long::sum);
          requested.add(key);
        }
        case "miss" -> {
          fields(f, 4);
          RequestKey key = optionalKey(f[1]);
          long lookup = nonNegative(f[2]);
          long compile = nonNegative(f[3]);
          compileNanos += compile;
          missLookupNanos += lookup;
          missCompileNanos += compile;
          misses++;
          if (key != null) {
            missesByKey.merge(key, 1L, Long::sum);
            requested.add(key);
          }
        }
        case "fallback" -> {
          fields(f, 5);
          RequestKey key = optionalKey(f[1]);
          nonNegative(f[2]);
          compileNanos += nonNegative(f[3]);
          fallbacks++;
          if (key != null) {
            damaged.add(key);
            requested.add(key);
          }
          reasons.add(f[4]);
        }
        case "recorded" -> {
          fields(f, 3);
          key(f[1]);
          nonNegative(f[2]);
          recorded++;
        }
        case "unrecorded" -> {
          fields(f, 3);
          optionalKey(f[1]);
          unrecorded++;
        }
        case "preloaded" -> {
          fields(f, 3);
          key(f[1]);
          nonNegative(f[2]);
          preloaded++;
        }
        case "preload_hit" -> {
          fields(f, 4);
          key(f[1]);
          nonNegative(f[2]);
          preloadHiddenNanos += nonNegative(f[3]);
          preloadHits++;
        }
        default -> throw new IllegalArgumentException("unknown kind '" + f[0] + "'");
      }
    }

    RunStatistics build() {
      return new RunStatistics(hits + misses + fallbacks, hits, misses, fallbacks, recorded, unrecorded,
          Duration.ofNanos(compileNanos), Duration.ofNanos(savedNanos), hitsByKey, damaged, List.copyOf(reasons),
          Duration.ofNanos(missLookupNanos), Duration.ofNanos(missCompileNanos), Duration.ofNanos(serveNanos),
          missesByKey, preloaded, preloadHits, Duration.ofNanos(preloadHiddenNanos), List.copyOf(requested));
    }

    private static void fields(String[] f, int n) {
      if (f.length != n) {
        throw new IllegalArgumentException(f[0] + " has " + f.length + " fields, not " + n);
      }
    }

    private static RequestKey key(String s) {
      return RequestKey.parse(s);
    }

    private static RequestKey optionalKey(String s) {
      return s.equals("-") ? null : RequestKey.parse(s);
    }

    private static long nonNegative(String s) {
      long v;
      try {
        v = Long.parseLong(s);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("not a number: '" + s + "'");
      }
      if (v < 0) {
        throw new IllegalArgumentException("negative: " + s);
      }
      return v;
    }
  }
}
