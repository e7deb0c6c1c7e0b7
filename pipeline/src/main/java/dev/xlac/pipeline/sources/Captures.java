package dev.xlac.pipeline.sources;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.ExitCode;
import dev.xlac.pipeline.explain.WhyNew;
import dev.xlac.pipeline.recording.RecordingResult;
import java.util.function.Consumer;

/** {@code xlac dump}: a traced command's graphs go into the cache while it runs; nothing is compiled. */
public final class Captures {
  private Captures() {}

  /**
   * Runs {@code trace}'s command and stores every graph it dumps.
   *
   * @param unreadable told each unreadable dump's message as it happens (the others are still taken)
   */
  public static CaptureResult dump(CacheStore.Opener cache, TraceSpec trace, Consumer<String> unreadable)
      throws InterruptedException {
    try (CommandSource source = CommandSource.create(trace); CacheStore store = cache.open()) {
      CacheIntake intake = new CacheIntake(store, unreadable, m -> {});
      CommandSource.Traced traced = source.run(intake);
      if (traced.notRunnable() != null) {
        return CaptureResult.notRunnable(traced.notRunnable());
      }
      CommandEnding ending = CommandEnding.of(trace.command(), traced.outcome(), intake, trace.ignoreScriptErrors());
      // A failure that --ignore-script-errors let pass is 0, even with unreadable dumps.
      ExitCode otherwise = !ending.failed() && intake.unreadable() > 0 ? ExitCode.BAD_INPUT : ExitCode.OK;
      RecordingResult recorded = source.ingestRecording(store, unreadable);
      return new CaptureResult(null, traced.outcome().notes(), intake.summary(), intake.alreadyCompiled(),
          source.keptDumps(), ending, intake.unreadable(), ending.exitStatus(otherwise),
          WhyNew.explain(store, intake.newGraphs()), recorded);
    }
  }
}
