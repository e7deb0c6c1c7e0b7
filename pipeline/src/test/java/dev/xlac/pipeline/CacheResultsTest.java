package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.schedule.CompileJob;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.FailureKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cache as a compile run sees it: what needs no compile, the job, and where results go. */
class CacheResultsTest {
  @TempDir
  Path tmp;

  private LoadedModule module(CacheStore store, float constant) throws Exception {
    LoadedModule m = new HloModuleReader().read(TestModules.writeDump(tmp.resolve("dumps"),
        "m" + constant + ".before_optimizations.hlo.pb", TestModules.mulAdd(constant)));
    store.putGraph(m);
    return m;
  }

  private static CompileJob job(CacheResults results, LoadedModule m) {
    return results.job(m.fingerprint(), m.moduleName());
  }

  @Test
  void settled_previouslyFailed_isSkippedUnlessRetryFailed() throws Exception {
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {})) {
      LoadedModule failed = module(store, 1.5f);
      CacheResults run = new CacheResults(store, FakeCompiler.IDENTITY, false);
      assertThat(run.settled(failed.fingerprint(), failed.moduleName())).isEmpty(); // never tried: compile it
      run.store(job(run, failed), new CompileOutcome.Failure(FailureKind.COMPILE_ERROR, "rejected", "log", Duration.ZERO));

      assertThat(run.settled(failed.fingerprint(), failed.moduleName())).hasValueSatisfying(r -> {
        assertThat(r.status()).isEqualTo(GraphResult.Status.PREVIOUSLY_FAILED);
        assertThat(r.error()).contains("rejected");
      });
      assertThat(new CacheResults(store, FakeCompiler.IDENTITY, true).settled(failed.fingerprint(),
          failed.moduleName())).isEmpty();
    }
  }

  @Test
  void store_success_makesTheGraphCached_andTheJobReadsTheModuleBack() throws Exception {
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {})) {
      LoadedModule m = module(store, 2.5f);
      CacheResults run = new CacheResults(store, FakeCompiler.IDENTITY, false);
      CompileJob job = job(run, m);
      assertThat(job.module().load()).isEqualTo(m.moduleBytes());
      run.store(job, new CompileOutcome.Success(new byte[] {4, 2}, "", Duration.ofMillis(3), Map.of()));

      assertThat(run.settled(m.fingerprint(), m.moduleName())).hasValue(GraphResult.cached(m.fingerprint(),
          m.moduleName()));
      assertThat(store.getArtifact(new ArtifactKey(m.fingerprint(), FakeCompiler.IDENTITY)))
          .hasValueSatisfying(a -> assertThat(a.bytes()).containsExactly(4, 2));
    }
  }
}
