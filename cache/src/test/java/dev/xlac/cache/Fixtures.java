package dev.xlac.cache;

import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/** Test data: synthetic fingerprints, identities and artifact bytes; a settable clock. */
public final class Fixtures {
  public static final CompilerIdentity CPU = new CompilerIdentity("pjrt", "cpu 0.7.1", "cpu", List.of(), Map.of());
  public static final CompilerIdentity TRN1 = new CompilerIdentity("neuronx-cc", "2.21.0", "trn1", List.of("-O2"),
      Map.of("num_replicas", "1"));

  private Fixtures() {}

  private static final Map<Integer, byte[]> MODULES = new java.util.concurrent.ConcurrentHashMap<>();
  private static final Map<Integer, GraphFingerprint> FINGERPRINTS = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Graph {@code n}'s module: a small real HloModuleProto named {@code jit_g<n>} whose constant is
   * {@code n}, so that a bundle of it passes import's fingerprint check.
   */
  public static byte[] module(int n) {
    return MODULES.computeIfAbsent(n, k -> TestModules.mulAdd(k).toBuilder().setName("jit_g" + k).build().toByteArray())
        .clone();
  }

  /** The fingerprint of {@link #module(int)}. */
  public static GraphFingerprint fp(int n) {
    return FINGERPRINTS.computeIfAbsent(n, k -> {
      byte[] m = module(k);
      return new HloModuleReader().parse(Path.of("graph-" + k), HloFileKind.HLO_MODULE, m, m.length).fingerprint();
    });
  }

  public static byte[] bytes(long seed, int size) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** Stores graph {@code n} with its small module. */
  public static void graph(CacheStore s, int n) {
    s.putGraph(fp(n), "jit_g" + n, module(n), "test/" + n);
  }

  /**
   * Stores graphs {@code from..to-1}, each with a CPU artifact of {@code size} bytes, a thousand to
   * a batch and without fsync: fast set-up for tests that need many entries.
   */
  public static void bulk(CacheStore s, int from, int to, int size) {
    bulk(s, from, to, size, true);
    s.sync();
  }

  /** As {@link #bulk(CacheStore, int, int, int)}; {@code logged} false: the batches skip the write-ahead log, unsynced. */
  public static void bulk(CacheStore s, int from, int to, int size, boolean logged) {
    for (int start = from; start < to; start += 1000) {
      int end = Math.min(to, start + 1000);
      int first = start;
      Store.TxnBody<Object> body = txn -> {
        long now = Internals.store(s).clock().millis();
        for (int n = first; n < end; n++) {
          byte[] module = module(n);
          byte[] stored = com.github.luben.zstd.Zstd.compress(module);
          txn.writeGraph(fp(n).digest(), new Records.GraphRecord("jit_g" + n, "bulk", now, now, 1, module.length,
              stored.length, Checksums.sha256(stored), now + n, List.of()), stored);
          byte[] art = bytes(n, size);
          txn.putIdentity(CPU);
          txn.writeArtifact(key(n, CPU).bytes(), new Records.ArtifactRecord(EntryStatus.COMPILED, size,
              Checksums.sha256(art), 1000, now, now + n, null, null, 0, 0, null), art, null);
        }
        return null;
      };
      if (logged) {
        Internals.store(s).commit(false, body);
      } else {
        StoreInternals.commitUnlogged(Internals.store(s), body);
      }
    }
  }

  public static ArtifactKey key(int n, CompilerIdentity c) {
    return new ArtifactKey(fp(n), c);
  }

  public static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> { });
  }

  /** A clock tests move by hand, so last-access order is exact. */
  public static final class ManualClock extends Clock {
    final AtomicLong millis = new AtomicLong(1_700_000_000_000L);

    public void advance(Duration d) {
      millis.addAndGet(d.toMillis());
    }

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }

    @Override
    public long millis() {
      return millis.get();
    }
  }
}
