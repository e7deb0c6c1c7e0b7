package dev.xlac.cache.store;

import dev.xlac.cache.EntryStatus;

/**
 * The running totals of a cache, kept in one record that every mutating WriteBatch rewrites, so
 * they never drift from the entries they count. The usage counters (hits, misses, ...) are
 * written with the next batch or at close; a crash may lose the latest of them, never entries.
 */
public final class Totals {
  public long graphs;
  public long graphRawBytes;
  public long graphStoredBytes;
  public long compiled;
  public long failed;
  public long artifactBytes;
  long logRawBytes;
  long logStoredBytes;
  public long hits;
  public long misses;
  public long savedMillis;
  public long cleanups;
  public long damagedReads;
  public long countersSince;
  /** Recorded PJRT compile requests (schema version 4), what they and their executables occupy, stored and raw. */
  public long requests;
  public long requestStoredBytes;
  public long requestRawBytes;
  /** Compiles the runtime served from a layout materialized from this cache, and the compile time they saved. */
  public long runtimeHits;
  public long runtimeSavedMillis;

  public long storedBytes() {
    return graphStoredBytes + artifactBytes + logStoredBytes + requestStoredBytes;
  }

  public long rawBytes() {
    return graphRawBytes + artifactBytes + logRawBytes + requestRawBytes;
  }

  Totals copy() {
    return fromArray(toArray());
  }

  /** How many longs the totals record holds: the length of {@link #toArray()}, so it cannot drift from it. */
  static final int FIELDS = new Totals().toArray().length;

  long[] toArray() {
    return new long[] {graphs, graphRawBytes, graphStoredBytes, compiled, failed, artifactBytes, logRawBytes,
        logStoredBytes, hits, misses, savedMillis, cleanups, damagedReads, countersSince, requests, requestStoredBytes,
        requestRawBytes, runtimeHits, runtimeSavedMillis};
  }

  /** The fields of a totals record written before schema version 4 (no request fields: they read as 0). */
  static final int FIELDS_BEFORE_REQUESTS = 14;

  static Totals fromArray(long[] v) {
    if (v.length < FIELDS) {
      v = java.util.Arrays.copyOf(v, FIELDS);
    }
    Totals t = new Totals();
    t.graphs = v[0];
    t.graphRawBytes = v[1];
    t.graphStoredBytes = v[2];
    t.compiled = v[3];
    t.failed = v[4];
    t.artifactBytes = v[5];
    t.logRawBytes = v[6];
    t.logStoredBytes = v[7];
    t.hits = v[8];
    t.misses = v[9];
    t.savedMillis = v[10];
    t.cleanups = v[11];
    t.damagedReads = v[12];
    t.countersSince = v[13];
    t.requests = v[14];
    t.requestStoredBytes = v[15];
    t.requestRawBytes = v[16];
    t.runtimeHits = v[17];
    t.runtimeSavedMillis = v[18];
    return t;
  }

  /** True when the entry counts (not the usage counters) agree. */
  public boolean sameContents(Totals o) {
    return graphs == o.graphs && graphRawBytes == o.graphRawBytes && graphStoredBytes == o.graphStoredBytes
        && compiled == o.compiled && failed == o.failed && artifactBytes == o.artifactBytes
        && logRawBytes == o.logRawBytes && logStoredBytes == o.logStoredBytes && requests == o.requests
        && requestStoredBytes == o.requestStoredBytes && requestRawBytes == o.requestRawBytes;
  }

  public void addGraph(Records.GraphRecord g, int sign) {
    graphs += sign;
    graphRawBytes += sign * g.rawBytes();
    graphStoredBytes += sign * g.storedBytes();
  }

  public void addArtifact(Records.ArtifactRecord a, int sign) {
    if (a.status() == EntryStatus.COMPILED) {
      compiled += sign;
    } else {
      failed += sign;
    }
    artifactBytes += sign * a.bytes();
    logRawBytes += sign * a.logRawBytes();
    logStoredBytes += sign * a.logStoredBytes();
  }

  public void addRequest(Records.RequestRecord r, int sign) {
    requests += sign;
    requestStoredBytes += sign * r.storedBytes();
    requestRawBytes += sign * r.rawBytes();
  }

  public void copyCountersFrom(Totals o) {
    runtimeHits = o.runtimeHits;
    runtimeSavedMillis = o.runtimeSavedMillis;
    hits = o.hits;
    misses = o.misses;
    savedMillis = o.savedMillis;
    cleanups = o.cleanups;
    damagedReads = o.damagedReads;
    countersSince = o.countersSince;
  }
}
