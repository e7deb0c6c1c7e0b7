package dev.xlac.faults;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a cache holds, as the suite compares it: every graph, artifact, recorded failure and log,
 * keyed by {@code "graph FP"}, {@code "artifact FP CID"}, {@code "failure FP CID"}, {@code "log FP CID"},
 * each mapped to the SHA-256 of its bytes (computed here from the bundle's entry, not taken from
 * its manifest) or, for a failure, its kind and message.
 *
 * @param modules fingerprint -> module name, for messages
 * @param storedBytes what the entries occupy as the manifest counts them (graphs stored, artifacts, logs stored)
 */
record Content(Map<String, String> entries, Map<String, String> modules, long storedBytes) {
  static final Content EMPTY = new Content(Map.of(), Map.of(), 0);

  /**
   * The content of a bundle. Anything in it that contradicts its own manifest (bytes whose SHA-256
   * is not the listed one, a listed entry that is absent) is added to {@code wrong}: a bundle that
   * xlac wrote must never carry such bytes.
   */
  static Content of(Bundle bundle, List<String> wrong) {
    Bundle.Manifest m = bundle.manifest();
    Map<String, String> entries = new TreeMap<>();
    Map<String, String> modules = new HashMap<>();
    long stored = 0;
    for (String[] g : m.lines("graph")) {
      stored += Long.parseLong(g[2]);
      modules.put(g[1], g.length > 8 ? g[8] : "?");
      checkedSha(bundle, Bundle.graphEntry(g[1]), g[3], wrong).ifPresent(sha -> entries.put("graph " + g[1], sha));
    }
    for (String[] a : m.lines("artifact")) {
      String key = a[1] + " " + a[2];
      stored += Long.parseLong(a[4]) + Long.parseLong(a[8]);
      if (a[3].equals("compiled")) {
        checkedSha(bundle, Bundle.artifactEntry(a[1], a[2]), a[5], wrong)
            .ifPresent(sha -> entries.put("artifact " + key, sha));
      } else {
        entries.put("failure " + key, a[3] + " " + a[11] + " " + a[12]);
      }
      if (!a[8].equals("0")) {
        checkedSha(bundle, Bundle.logEntry(a[1], a[2]), a[9], wrong).ifPresent(sha -> entries.put("log " + key, sha));
      }
    }
    return new Content(entries, modules, stored);
  }

  private static java.util.Optional<String> checkedSha(Bundle b, String entry, String listed, List<String> wrong) {
    if (!b.has(entry)) {
      wrong.add("the bundle lists " + entry + " but does not hold it");
      return java.util.Optional.empty();
    }
    String sha = Bundle.sha256(b.data(entry));
    if (!sha.equals(listed)) {
      wrong.add("the bytes of " + entry + " do not match the SHA-256 its own manifest lists");
    }
    return java.util.Optional.of(sha);
  }

  int count(String kind) {
    return (int) entries.keySet().stream().filter(k -> k.startsWith(kind + " ")).count();
  }

  /** The union of two contents (the other's value wins: callers only merge contents that agree). */
  Content plus(Content other) {
    Map<String, String> e = new TreeMap<>(entries);
    e.putAll(other.entries);
    Map<String, String> m = new HashMap<>(modules);
    m.putAll(other.modules);
    return new Content(e, m, storedBytes + other.storedBytes);
  }

  /** Keys present in both with different bytes: always a failure (a wrong answer). */
  List<String> changedIn(Content after) {
    List<String> changed = new ArrayList<>();
    for (var e : entries.entrySet()) {
      String now = after.entries.get(e.getKey());
      if (now != null && !now.equals(e.getValue())) {
        changed.add(describe(e.getKey()));
      }
    }
    return changed;
  }

  /** Keys of this content that {@code after} lacks. */
  Set<String> missingFrom(Content after) {
    Set<String> missing = new TreeSet<>(entries.keySet());
    missing.removeAll(after.entries.keySet());
    return missing;
  }

  /** Keys of {@code after} that this content lacks. */
  Set<String> addedIn(Content after) {
    return after.missingFrom(this);
  }

  boolean hasArtifactOf(String fpPrefix) {
    return entries.keySet().stream().anyMatch(k -> k.startsWith("artifact " + fpPrefix));
  }

  /** "artifact 1a2b3c4d5e6f (jit_step) for compiler 9f8e7d6c" etc. */
  String describe(String key) {
    String[] p = key.split(" ");
    String fp = p[1];
    String s = p[0] + " " + fp.substring(0, Math.min(12, fp.length())) + " (" + modules.getOrDefault(fp, "?") + ")";
    return p.length > 2 ? s + " of compiler " + p[2].substring(0, Math.min(8, p[2].length())) : s;
  }

  String describe(Set<String> keys, int max) {
    List<String> d = keys.stream().limit(max).map(this::describe).toList();
    return String.join(", ", d) + (keys.size() > max ? " and " + (keys.size() - max) + " more" : "");
  }
}
