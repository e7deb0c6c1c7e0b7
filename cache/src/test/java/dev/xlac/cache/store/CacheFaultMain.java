package dev.xlac.cache.store;

import dev.xlac.cache.Artifact;
import dev.xlac.cache.BundleKey;
import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.Internals;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.TrustSettings;
import dev.xlac.cache.repair.RepairInternals;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * A real writer process for the fault tests: each mode opens a cache for writing, says on stdout
 * when it has started and (for {@code write}) each entry it committed, and exits with the CLI's
 * exit codes and one-line errors. The tests kill it with SIGKILL or run it under a file-size limit.
 *
 * <pre>
 * write DIR COUNT BYTES [CHUNK]  store COUNT graphs with an artifact of BYTES each (in chunks of CHUNK bytes
 *                         when given); "committed N" after each
 * half-a-value DIR BYTES CHUNK  graph 1, then half of a BYTES artifact for it through a value writer with
 *                         CHUNK-byte chunks; "half"; waits
 * import DIR FILE         import a bundle
 * import-flushing DIR FILE  import a bundle with tiny memtables, so flushes happen all through the import
 * import-streaming DIR FILE CHUNK  import a bundle whose values are larger than CHUNK bytes, the chunk size, with
 *                         1 MiB memtables: streamed a piece at a time, with flushes all through the import
 * prune DIR MAXBYTES      prune to MAXBYTES
 * unlogged-then-logged DIR  entries 0..49 in unlogged batches, then entry 100 logged and synced; "committed 100"; waits
 * hold DIR MILLIS         take the lock ("locked"), write one graph, sleep, exit
 * keep-writing DIR BYTES  write entries of BYTES (graph, artifact, sync) until ten writes failed, going on after
 *                         each failure with a sync and a write of another kind; "failed: MESSAGE" for each
 * settings DIR            set max-size, require-signed, a trusted key, and count a hit and a miss
 * show DIR                print the settings, counters and contents ("max-size N", ...) read-only
 * check DIR COUNT BYTES   read-only: "missing N" / "wrong N" for each entry 0..COUNT-1 (as write stores them)
 *                         that is not there with its bytes
 * clear DIR               clear the cache
 * verify-repair DIR       verify --repair as the CLI runs it; "repaired N" (problems found), then "problems N"
 *                         (left after it)
 * count-hits DIR         open for writing, which counts the runtime-hit records; "step S" at each step of it, and
 *                         at "counted" (the counting commit durable, the files not deleted) it waits
 * repair DIR [STEP]       verify --repair ({@link CacheRepair#repair}); "step S" at each step of a rebuild, and
 *                         at STEP it waits (to be killed there)
 * </pre>
 */
public final class CacheFaultMain {
  private CacheFaultMain() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[1]);
    if (args[0].equals("import-flushing")) {
      RocksDbStore.writeBufferBytesForTests = 256 << 10;
    }
    if (args[0].equals("import-streaming")) {
      RocksDbStore.writeBufferBytesForTests = 1 << 20;
      StoredValues.chunkBytesForTests = Integer.parseInt(args[3]);
    }
    if (args[0].equals("write") && args.length > 4) {
      StoredValues.chunkBytesForTests = Integer.parseInt(args[4]);
    }
    if (args[0].equals("put-requests")) { // put-requests CACHE CHUNK_BYTES: until killed
      StoredValues.chunkBytesForTests = Integer.parseInt(args[2]);
    }
    if (args[0].equals("half-a-value")) {
      StoredValues.chunkBytesForTests = Integer.parseInt(args[3]);
    }
    if (args[0].equals("show") || args[0].equals("check")) {
      readOnly(args);
      return;
    }
    if (args[0].equals("verify-repair")) {
      try {
        RepairReport r = CacheRepair.repair(dir, Duration.ZERO, m -> { });
        System.out.println("repaired " + (r.found() == null ? -1 : r.found().problems().size()));
        System.out.println("problems " + (r.after() == null ? -1 : r.after().problems().size()));
      } catch (XlacException e) {
        System.err.println("xlac: " + e.getMessage());
        System.exit(e.exitCode().code());
      }
      return;
    }
    if (args[0].equals("ingest")) { // ingest CACHE SPOOL: waits for the writer lock, so two may run at once
      try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, null, m -> { })) {
        System.out.println("started");
        dev.xlac.cache.RequestIngest r = dev.xlac.cache.layout.PjrtRecordSpool.ingest(Path.of(args[2]), s,
            p -> System.out.println("problem " + p));
        System.out.println("ingested " + r.added() + " " + r.alreadyPresent() + " " + r.rejected().size());
      } catch (XlacException e) {
        System.out.println("xlac: " + e.getMessage());
        System.out.flush();
        System.exit(e.exitCode().code());
      }
      return;
    }
    if (args[0].equals("materialize")) { // materialize CACHE LAYOUT
      try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
        System.out.println("started");
        var r = dev.xlac.cache.layout.PjrtRuntimeLayout.materialize(s, Path.of(args[2]), java.util.Optional.empty(),
            p -> System.out.println("problem " + p));
        System.out.println("materialized " + r.written() + " " + r.kept());
      } catch (XlacException e) {
        System.out.println("xlac: " + e.getMessage());
        System.out.flush();
        System.exit(e.exitCode().code());
      }
      return;
    }
    if (args[0].equals("count-hits")) { // count-hits CACHE: a writer's open counts the runtime-hit records, and
      // waits (to be killed) once the commit that counted them is durable, before it deletes their files
      PendingHits.stepsForTests = step -> {
        System.out.println("step " + step);
        if (step.equals("counted")) {
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      };
      try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> { })) {
        System.out.println("done");
      }
      return;
    }
    if (args[0].equals("repair")) {
      String pauseAt = args.length > 2 ? args[2] : null;
      RepairInternals.steps(step -> {
        System.out.println("step " + step);
        if (step.equals(pauseAt)) {
          try {
            Thread.sleep(60_000); // killed here
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      });
      System.out.println("started");
      try {
        RepairReport r = CacheRepair.repair(dir, Duration.ZERO, m -> { });
        if (r.emptyReason() != null) {
          System.out.println("started empty: " + r.emptyReason() + "; the damaged database is in "
              + r.brokenDatabase());
        }
        System.out.println(r.clean() ? "done" : "not clean: " + r);
      } catch (XlacException e) {
        System.out.println("xlac: " + e.getMessage());
        System.out.flush();
        System.exit(e.exitCode().code());
      }
      return;
    }
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> { })) {
      switch (args[0]) {
        case "write" -> {
          int count = Integer.parseInt(args[2]);
          int size = Integer.parseInt(args[3]);
          System.out.println("started");
          for (int n = 0; n < count; n++) {
            Fixtures.graph(s, n);
            s.putArtifact(Fixtures.key(n, Fixtures.CPU), Fixtures.bytes(n, size), CompileInfo.of(n, "log " + n));
            System.out.println("committed " + n); // putArtifact returned: the entry is durable
          }
        }
        case "put-requests" -> {
          System.out.println("started");
          for (int n = 0; ; n++) { // each batch: a large executable in many chunks and a small one
            s.putRequests(java.util.List.of(dev.xlac.cache.RequestFixtures.request(n, 300_000),
                dev.xlac.cache.RequestFixtures.request(100_000 + n, 50)));
            System.out.println("committed " + n);
          }
        }
        case "import", "import-flushing", "import-streaming" -> {
          System.out.println("started");
          s.importBundle(Path.of(args[2]));
        }
        case "prune" -> {
          System.out.println("started");
          PruneResult r = s.prune(new PruneRequest(OptionalLong.of(Long.parseLong(args[2])), null, false, null, null,
              false, false));
          System.out.println("pruned " + r.bytesFreed() + " disk " + r.diskAfter());
        }
        case "keep-writing" -> keepWriting(s, Integer.parseInt(args[2]));
        case "settings" -> {
          s.setMaxSize(OptionalLong.of(100L << 30));
          s.setRequireSigned(true);
          java.security.KeyPair pair = java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
          s.trustKey(BundleKey.of(pair.getPublic()), "fault test");
          Fixtures.graph(s, 900);
          s.putArtifact(Fixtures.key(900, Fixtures.CPU), Fixtures.bytes(900, 100), CompileInfo.of(1, ""));
          s.lookup(Fixtures.key(900, Fixtures.CPU)); // a hit
          s.lookup(Fixtures.key(900, Fixtures.TRN1)); // a miss
        }
        case "clear" -> System.out.println("cleared " + s.clear());
        case "unlogged-then-logged" -> {
          System.out.println("started");
          Fixtures.bulk(s, 0, 50, 2000, false);
          Fixtures.graph(s, 100);
          s.putArtifact(Fixtures.key(100, Fixtures.CPU), Fixtures.bytes(100, 2000), CompileInfo.of(1, ""));
          System.out.println("committed 100");
          Thread.sleep(60_000); // killed here
        }
        case "half-a-value" -> {
          int size = Integer.parseInt(args[2]);
          Fixtures.graph(s, 1);
          StoredValues.ValueWriter w = Internals.store(s).values.writer(RocksDbStore.Cf.ARTIFACTS, Fixtures.key(1, Fixtures.CPU).bytes(),
              size, true);
          w.write(Fixtures.bytes(1, size), 0, size / 2);
          s.sync();
          System.out.println("half");
          Thread.sleep(60_000); // killed here
        }
        case "hold" -> {
          System.out.println("locked");
          Fixtures.graph(s, 1000 + (int) (ProcessHandle.current().pid() % 1000));
          Thread.sleep(Long.parseLong(args[2]));
        }
        default -> throw new IllegalArgumentException(args[0]);
      }
      System.out.println("done");
    } catch (XlacException e) {
      System.err.println("xlac: " + e.getMessage());
      System.out.flush();
      System.exit(e.exitCode().code());
    }
  }

  private static void readOnly(String[] args) throws Exception {
    try (CacheStore s = CacheStore.open(Path.of(args[1]), CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
      if (args[0].equals("show")) {
        CacheStatistics st = s.statistics();
        TrustSettings trust = s.trustSettings();
        System.out.println("max-size " + s.maxSize().orElse(-1));
        System.out.println("require-signed " + trust.requireSigned());
        System.out.println("trusted " + trust.keys().size());
        System.out.println("hits " + st.hits() + " misses " + st.misses());
        System.out.println("graphs " + st.graphs() + " artifacts " + st.compiled());
        return;
      }
      int count = Integer.parseInt(args[2]);
      int size = Integer.parseInt(args[3]);
      for (int n = 0; n < count; n++) {
        java.util.Optional<Artifact> a = s.getArtifact(Fixtures.key(n, Fixtures.CPU));
        if (a.isEmpty()) {
          System.out.println("missing " + n);
        } else if (!java.util.Arrays.equals(a.get().bytes(), Fixtures.bytes(n, size))) {
          System.out.println("wrong " + n);
        }
      }
      System.out.println("checked " + count);
    } catch (XlacException e) {
      System.err.println("xlac: " + e.getMessage());
      System.exit(e.exitCode().code());
    }
  }

  /** Writes on after failures, each time in another way, as a long compile run would. */
  private static void keepWriting(CacheStore s, int size) {
    int failures = 0;
    for (int n = 0; failures < 10 && n < 10_000; n++) {
      try {
        switch (failures % 4) {
          case 0, 1 -> {
            Fixtures.graph(s, n);
            s.putArtifact(Fixtures.key(n, Fixtures.CPU), Fixtures.bytes(n, size), CompileInfo.of(n, "log " + n));
          }
          case 2 -> {
            Fixtures.graph(s, n);
            s.sync();
          }
          default -> {
            Fixtures.graph(s, n);
            s.putArtifacts(java.util.List.of(new CacheStore.NewArtifact(Fixtures.key(n, Fixtures.TRN1),
                Fixtures.bytes(n, size), CompileInfo.of(n, ""))));
          }
        }
        System.out.println("committed " + n);
      } catch (XlacException e) {
        failures++;
        System.out.println("failed: " + e.getMessage());
        try {
          s.sync(); // what a command does at its end, whatever failed before
        } catch (XlacException again) {
          System.out.println("failed: " + again.getMessage());
        }
      }
    }
    System.out.println("failures " + failures);
  }
}
