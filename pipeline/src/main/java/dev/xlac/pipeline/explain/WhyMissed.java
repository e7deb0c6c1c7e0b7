package dev.xlac.pipeline.explain;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestInfo;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.DiffReason;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.NearestRelative;
import dev.xlac.runtime.CanonicalOptions;
import dev.xlac.runtime.CanonicalProgram;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import dev.xlac.runtime.RunStatistics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Why a compile of {@code xlac run} was not served (a miss): its request (kept by the proxy in the statistics
 * directory) against the requests the cache has recorded. In this order: the cache holds the request itself (not
 * in the layout served from); a recorded request of the same program (the program as this plugin would get it,
 * {@link StablehloTarget}) for another plugin or machine (the identity lines that differ) or with other compile
 * options (the fields that differ); the nearest recorded request of the same module (HLO: the {@link GraphDiff}
 * reason {@link WhyNew} gives; other formats: their sizes); else not recorded. pipeline/README.md, "Why a compile
 * was not served", has the rules.
 */
public final class WhyMissed {
  /** Recorded programs read per explanation to learn their module names, newest first, so that a run stays fast. */
  static final long PROGRAM_BYTES = 256L << 20;

  /** Module names listed per group before "and N more". */
  private static final int NAMES_SHOWN = 6;

  /** Differences named per reason before "and N more". */
  private static final int DIFFERENCES_SHOWN = 3;

  private WhyMissed() {}

  /** What kind of reason: its word in the JSON. */
  public enum Kind {
    NOT_RECORDED("not_recorded"), IDENTITY("identity"), OPTIONS("options"), IDENTITY_AND_OPTIONS(
        "identity_and_options"), PROGRAM("program"), NOT_IN_LAYOUT("not_in_layout"), UNKNOWN("unknown");

    private final String word;

    Kind(String word) {
      this.word = word;
    }

    public String word() {
      return word;
    }
  }

  /**
   * Why one request was not served.
   *
   * @param key the request
   * @param count how many compiles of it missed
   * @param module its module name ({@code jit_step}, {@code SyncTensorsGraph.12}), or "" when it has none
   * @param kind the kind of reason
   * @param identityLines the identity lines that differ from the nearest recorded request's (for identity kinds)
   * @param optionFields the compile option fields that differ (for option kinds)
   * @param programChange how the program differs from the nearest recorded one of its module, in a few words
   *     (for {@link Kind#PROGRAM} of HLO programs: {@code batch size (32 -> 64)}), or why the reason is unknown;
   *     else null (a StableHLO program is not compared in detail)
   * @param verdict {@code xlac diff}'s verdict against the nearest recorded request (HLO programs), or null
   * @param nearest the recorded request compared with, or null
   */
  public record Reason(RequestKey key, long count, String module, Kind kind, List<String> identityLines,
      List<String> optionFields, String programChange, String verdict, RequestKey nearest) {
    public Reason {
      identityLines = List.copyOf(identityLines);
      optionFields = List.copyOf(optionFields);
    }

    static Reason of(RequestKey key, long count, String module, Kind kind, String detail) {
      return new Reason(key, count, module, kind, List.of(), List.of(), detail, null, null);
    }

    /** The module's name, or the key's first digits when it has none. */
    public String name() {
      return module.isEmpty() ? key.text().substring(0, 14) : module;
    }

    /** The reason without the module's name, e.g. {@code recorded with other compile options (...)}. */
    public String text() {
      return switch (kind) {
        case NOT_RECORDED -> "not recorded";
        case IDENTITY -> "recorded for another plugin or machine (" + lines(identityLines) + ")";
        case OPTIONS -> "recorded with other compile options (" + shown(optionFields) + ")";
        case IDENTITY_AND_OPTIONS -> "recorded for another plugin or machine (" + lines(identityLines)
            + ") and with other compile options (" + shown(optionFields) + ")";
        case PROGRAM -> programChange == null ? "program changed" : "program changed (" + programChange + ")";
        case NOT_IN_LAYOUT -> "recorded, but not in the runtime layout served from";
        case UNKNOWN -> "unknown (" + programChange + ")";
      };
    }

    private static String lines(List<String> names) {
      return (names.size() == 1 ? "line " : "lines ") + shown(names) + (names.size() == 1 ? " differs" : " differ");
    }

    private static String shown(List<String> items) {
      if (items.size() <= DIFFERENCES_SHOWN) {
        return String.join(", ", items);
      }
      return String.join(", ", items.subList(0, DIFFERENCES_SHOWN)) + " and " + (items.size() - DIFFERENCES_SHOWN)
          + " more";
    }

    /**
     * The JSON form: {@code key}, {@code module}, {@code count}, {@code reason} (the kind's word), {@code text},
     * {@code identity_lines}, {@code option_fields}, {@code program_change}, {@code verdict} and {@code nearest}.
     */
    public Map<String, Object> toJson() {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("key", key.text());
      j.put("module", module);
      j.put("count", count);
      j.put("reason", kind.word());
      j.put("text", text());
      j.put("identity_lines", identityLines);
      j.put("option_fields", optionFields);
      j.put("program_change", programChange);
      j.put("verdict", verdict);
      j.put("nearest", nearest == null ? null : nearest.text());
      return j;
    }
  }

  /** The reasons of a run's misses, in the order the misses were first seen. */
  public record Summary(List<Reason> reasons) {
    public static final Summary NONE = new Summary(List.of());

    public Summary {
      reasons = List.copyOf(reasons);
    }

    /**
     * One line per group of like reasons, the largest first, e.g. {@code 2 not served: program changed (batch
     * size (8 -> 16)): jit_step, jit_eval}; none without misses.
     */
    public List<String> lines() {
      Map<String, List<Reason>> groups = new LinkedHashMap<>();
      reasons.forEach(r -> groups.computeIfAbsent(r.text(), k -> new ArrayList<>()).add(r));
      List<List<Reason>> ordered = new ArrayList<>(groups.values());
      ordered.sort(Comparator.comparingLong(g -> -g.stream().mapToLong(Reason::count).sum()));
      List<String> out = new ArrayList<>();
      for (List<Reason> g : ordered) {
        long n = g.stream().mapToLong(Reason::count).sum();
        out.add(n + " not served: " + g.getFirst().text() + ": " + names(g));
      }
      return out;
    }

    private static String names(List<Reason> g) {
      Map<String, Long> counts = g.stream().collect(Collectors.groupingBy(Reason::name, LinkedHashMap::new,
          Collectors.summingLong(Reason::count)));
      List<String> distinct = counts.entrySet().stream()
          .map(e -> e.getValue() == 1 ? e.getKey() : e.getKey() + " x" + e.getValue()).toList();
      if (distinct.size() <= NAMES_SHOWN) {
        return String.join(", ", distinct);
      }
      return String.join(", ", distinct.subList(0, NAMES_SHOWN)) + " and " + (distinct.size() - NAMES_SHOWN) + " more";
    }

    public List<Object> toJson() {
      return reasons.stream().map(r -> (Object) r.toJson()).toList();
    }
  }

  /**
   * Explains each miss of a run against the cache's recorded requests (the cache as it is before the run's own
   * recording goes in).
   *
   * @param misses key -> how many compiles of it missed, in the order first seen
   * @param requests the misses' requests the proxy kept ({@code RunStatistics.missRequests}); a miss without one
   *     is {@link Kind#UNKNOWN}
   */
  public static Summary explain(CacheStore store, Map<RequestKey, Long> misses, Map<RequestKey, RecordedRequest> requests) {
    if (misses.isEmpty()) {
      return Summary.NONE;
    }
    Catalog catalog = new Catalog(store);
    List<Reason> out = new ArrayList<>();
    misses.forEach((key, count) -> {
      RecordedRequest r = requests.get(key);
      if (r == null) {
        out.add(Reason.of(key, count, "", Kind.UNKNOWN, "the proxy could not keep its request"));
      } else {
        out.add(explainRequest(catalog, r, count, null));
      }
    });
    return new Summary(out);
  }

  /**
   * The reasons of a run's misses ({@code stats}: its statistics directory, holding the misses' requests) against
   * {@code store}, opened by the run already; none without misses.
   */
  public static Summary forRun(CacheStore store, RunStatistics s, Path stats) {
    if (s.missesByKey().isEmpty()) {
      return Summary.NONE;
    }
    try {
      return explain(store, s.missesByKey(), RunStatistics.missRequests(stats));
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
      // never fail the end of a run that has trained for an explanation (a huge program, a deep graph)
      return unknown(s.missesByKey(), "cannot compare with the cache: " + reason(e));
    }
  }

  /** As {@link #forRun(CacheStore, RunStatistics, Path)}, opening the cache at {@code cacheDir} read-only. */
  public static Summary forRun(Path cacheDir, RunStatistics s, Path stats) throws InterruptedException {
    if (s.missesByKey().isEmpty()) {
      return Summary.NONE;
    }
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO, m -> { })) {
      return forRun(store, s, stats);
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
      return unknown(s.missesByKey(), "cannot read the cache: " + reason(e));
    }
  }

  private static String reason(Throwable e) {
    return e instanceof OutOfMemoryError ? "out of memory" : e instanceof StackOverflowError ? "a program nested too deeply"
        : e instanceof XlacException x ? x.getMessage() : XlacException.reason(e);
  }

  /** Every miss {@link Kind#UNKNOWN}, for {@code why} (the cache could not be read). */
  public static Summary unknown(Map<RequestKey, Long> misses, String why) {
    List<Reason> out = new ArrayList<>();
    misses.forEach((key, count) -> out.add(Reason.of(key, count, "", Kind.UNKNOWN, why)));
    return new Summary(out);
  }

  /** Whether {@code xlac cache why} takes an argument as a request key ({@code pjrt1:...}). */
  public static boolean namesRequest(String text) {
    return text.startsWith(RequestKey.VERSION + ":");
  }

  /**
   * {@code xlac cache why pjrt1:<hex>}: {@link #explainOne(CacheStore, RequestKey)} for the request a key names.
   *
   * @throws XlacException exit code 2, one line, when it is not {@code pjrt1:} and 64 hex digits, or names no
   *     readable request of the cache
   */
  public static Reason explainOne(CacheStore store, String key) {
    RequestKey k;
    try {
      k = RequestKey.parse(key);
    } catch (IllegalArgumentException e) {
      throw XlacException.badInput("'" + key + "' is not a request key (pjrt1: and 64 hex digits)");
    }
    return explainOne(store, k);
  }

  /**
   * {@code xlac cache why pjrt1:<hex>}: why this recorded request of the cache is not one of the others, the same way
   * (a request with no other of its program or module is "not recorded").
   *
   * @throws XlacException exit code 2 when the cache holds no request of this key, or cannot read it
   */
  public static Reason explainOne(CacheStore store, RequestKey key) {
    if (store.requestInfo(key).isEmpty()) {
      throw XlacException.badInput("no recorded request in cache " + store.directory() + " has key " + key.text());
    }
    RecordedRequest r = store.readRequestWithoutExecutable(key).orElseThrow(() -> XlacException.badInput(
        "recorded request " + key.text() + " in cache " + store.directory() + " cannot be read (it is damaged;"
            + " `xlac cache verify --repair` removes it)"));
    return explainRequest(new Catalog(store), r, 1, key);
  }

  /** Why {@code r} was not served; {@code self}, when given, is its own recorded request, left out of the search. */
  private static Reason explainRequest(Catalog catalog, RecordedRequest r, long count, RequestKey self) {
    String format = r.formatName();
    String module = moduleName(format, r.program());
    if (self == null && catalog.holds(r.key())) {
      return Reason.of(r.key(), count, module, Kind.NOT_IN_LAYOUT, null);
    }
    // 1. the same program, recorded for another identity or with other options: the nearest by differences
    Reason best = null;
    int bestScore = Integer.MAX_VALUE;
    // compared as the key sees programs: torch_xla writes the same HLO with its attribute maps in another order
    byte[] keyedProgram = CanonicalProgram.keyed(r.format(), r.program());
    for (RequestInfo info : catalog.infos) {
      if (info.key().equals(self) || !info.format().equals(format)
          || Math.abs(info.programBytes() - r.program().length) > 16) {
        continue; // a StableHLO version rewritten in the header changes the size by a few bytes at most
      }
      Optional<RecordedRequest> q = catalog.read(info.key());
      if (q.isEmpty() || !Arrays.equals(CanonicalProgram.keyed(q.get().format(), StablehloTarget.forPlugin(format,
          q.get().program(), q.get().identityText(), r.identityText())), keyedProgram)) {
        continue;
      }
      List<String> lines = PluginIdentityText.differingLines(q.get().identityText(), r.identityText());
      List<String> fields = CanonicalOptions.differences(q.get().options(), r.options());
      int score = lines.size() + fields.size();
      if (score < bestScore) {
        Kind kind = lines.isEmpty() && fields.isEmpty() ? Kind.NOT_IN_LAYOUT
            : fields.isEmpty() ? Kind.IDENTITY : lines.isEmpty() ? Kind.OPTIONS : Kind.IDENTITY_AND_OPTIONS;
        best = new Reason(r.key(), count, module, kind, lines, fields, null, null, info.key());
        bestScore = score;
      }
    }
    if (best != null) {
      return best;
    }
    // 2. the nearest recorded request of the same module
    List<RequestInfo> sameModule = module.isEmpty() ? List.of() : catalog.ofModule(format, module, self);
    if (sameModule.isEmpty() && !module.isEmpty() && format.equals("hlo")) {
      sameModule = catalog.ofFamily(format, WhyNew.family(module), self); // SyncTensorsGraph.N: N moves with the graph
    }
    if (!sameModule.isEmpty()) {
      Reason program = format.equals("hlo") ? hloChange(catalog, r, count, module, sameModule) : null;
      if (program != null) {
        return program;
      }
      RequestInfo nearest = sameModule.stream()
          .min(Comparator.comparingLong(i -> Math.abs(i.programBytes() - r.program().length))).orElseThrow();
      // xlac diff reads HLO only: a StableHLO program is said to have changed, against its nearest in size
      return new Reason(r.key(), count, module, Kind.PROGRAM, List.of(), List.of(), null, null, nearest.key());
    }
    return Reason.of(r.key(), count, module, Kind.NOT_RECORDED, null);
  }

  /** The reason {@link DiffReason} gives against the nearest of {@code candidates} (the first {@link WhyNew#MAX_CANDIDATES}). */
  private static Reason hloChange(Catalog catalog, RecordedRequest r, long count, String module,
      List<RequestInfo> candidates) {
    LoadedModule self = parse(module, r.program());
    if (self == null) {
      return null;
    }
    NearestRelative<RequestInfo> n = new NearestRelative<>(self);
    for (RequestInfo c : candidates.subList(0, Math.min(WhyNew.MAX_CANDIDATES, candidates.size()))) {
      Optional<RecordedRequest> q = catalog.read(c.key());
      n.consider(c, q.isEmpty() ? null : parse(module, q.get().program()), false);
    }
    if (n.candidate() == null) {
      return null;
    }
    GraphDiff best = n.diff();
    RequestInfo bestInfo = n.candidate();
    DiffReason w = DiffReason.of(best);
    // the diff's own words are too long for a grouped line: they stay in the verdict (as WhyNew's line does)
    String change = best.same() ? "only in what the fingerprint leaves out" : w.inVerdictsWords() ? null : w.text();
    return new Reason(r.key(), count, module, Kind.PROGRAM, List.of(), List.of(), change, best.verdict(),
        bestInfo.key());
  }

  private static LoadedModule parse(String name, byte[] program) {
    try {
      return HloModuleReader.forDiff().parse(Path.of(name.isEmpty() ? "request" : name), HloFileKind.HLO_MODULE,
          program, program.length);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * The module name of a program: an HLO module's {@code name} (HloModuleProto field 1); for a StableHLO portable
   * artifact ({@code mlir}, MLIR bytecode), the first string of its string table that JAX names modules with
   * ({@code jit_}, {@code pmap_}); "" when there is none.
   */
  static String moduleName(String format, byte[] program) {
    try {
      return switch (format) {
        case "hlo" -> hloName(program);
        case "mlir" -> MlirStrings.of(program).stream().filter(s -> s.startsWith("jit_") || s.startsWith("pmap_"))
            .findFirst().orElse("");
        default -> "";
      };
    } catch (RuntimeException e) {
      return "";
    }
  }

  private static String hloName(byte[] b) {
    int at = 0;
    while (at < b.length) {
      long[] tag = varint(b, at);
      at = (int) tag[1];
      int wire = (int) (tag[0] & 7);
      if (wire == 0) {
        at = (int) varint(b, at)[1];
      } else if (wire == 1) {
        at += 8;
      } else if (wire == 5) {
        at += 4;
      } else if (wire == 2) {
        long[] len = varint(b, at);
        at = (int) len[1];
        if (len[0] < 0 || len[0] > b.length - at) {
          return "";
        }
        if (tag[0] >>> 3 == 1) {
          return new String(b, at, (int) len[0], StandardCharsets.UTF_8);
        }
        at += (int) len[0];
      } else {
        return "";
      }
    }
    return "";
  }

  /** A varint at {@code at}: its value and the offset after it. */
  private static long[] varint(byte[] b, int at) {
    long v = 0;
    for (int i = 0; i < 10; i++) {
      if (at + i >= b.length) {
        throw new IllegalArgumentException("truncated varint");
      }
      v |= (long) (b[at + i] & 0x7f) << (7 * i);
      if ((b[at + i] & 0x80) == 0) {
        return new long[] {v, at + i + 1};
      }
    }
    throw new IllegalArgumentException("varint too long");
  }

  /** The cache's recorded requests, read once each, their module names learnt within {@link #PROGRAM_BYTES}. */
  private static final class Catalog {
    final List<RequestInfo> infos;
    private final CacheStore store;
    private final Map<RequestKey, Optional<RecordedRequest>> read = new HashMap<>();
    private final Map<String, Map<RequestKey, String>> names = new HashMap<>();

    Catalog(CacheStore store) {
      this.store = store;
      List<RequestInfo> all = new ArrayList<>(store.requests());
      all.sort(Comparator.comparing(RequestInfo::lastAccess).reversed().thenComparing(RequestInfo::key));
      this.infos = all;
    }

    boolean holds(RequestKey key) {
      return infos.stream().anyMatch(i -> i.key().equals(key));
    }

    Optional<RecordedRequest> read(RequestKey key) {
      return read.computeIfAbsent(key, k -> {
        try {
          return store.readRequestWithoutExecutable(k);
        } catch (RuntimeException e) {
          return Optional.empty();
        }
      });
    }

    /** Key -> module name of the recorded requests of {@code format}, newest first, within the byte budget. */
    private Map<RequestKey, String> names(String format) {
      return names.computeIfAbsent(format, f -> {
        Map<RequestKey, String> m = new LinkedHashMap<>();
        long budget = PROGRAM_BYTES;
        for (RequestInfo i : infos) {
          if (!i.format().equals(f)) {
            continue;
          }
          if (budget < i.programBytes()) {
            break;
          }
          budget -= i.programBytes();
          // only the name is kept: a program is read again (from the store) when it is compared
          Optional<RecordedRequest> q;
          try {
            q = store.readRequestWithoutExecutable(i.key());
          } catch (RuntimeException e) {
            q = Optional.empty();
          }
          q.ifPresent(r -> m.put(i.key(), moduleName(f, r.program())));
        }
        return m;
      });
    }

    List<RequestInfo> ofModule(String format, String module, RequestKey self) {
      Map<RequestKey, String> n = names(format);
      return infos.stream().filter(i -> !i.key().equals(self) && module.equals(n.get(i.key()))).toList();
    }

    List<RequestInfo> ofFamily(String format, String family, RequestKey self) {
      Map<RequestKey, String> n = names(format);
      return infos.stream().filter(i -> !i.key().equals(self) && n.containsKey(i.key())
          && WhyNew.family(n.get(i.key())).equals(family)).toList();
    }
  }
}
