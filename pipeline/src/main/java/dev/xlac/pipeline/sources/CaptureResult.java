package dev.xlac.pipeline.sources;

import dev.xlac.capture.NotRunnable;
import dev.xlac.pipeline.explain.WhyNew;
import dev.xlac.pipeline.recording.RecordingResult;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What a traced command did, for the CLI to print: {@link #notRunnable()} alone when it could not
 * even start; else the tracer's notes, the capture summary, the graphs already compiled (only for
 * {@code xlac dump}), where the dumps were kept, and how the command ended.
 *
 * @param notRunnable why the command could not run, or null
 * @param notes one-line notes from the tracer (for stderr)
 * @param summary e.g. {@code dumped 14 modules from 2 processes: 9 unique graphs, 7 new, 2 already in the cache}
 * @param alreadyCompiled per compiler (short name), how many of the graphs the cache has compiled
 * @param keptDumps where the raw dumps were kept ({@code --keep-dumps}), or null
 * @param unreadable dumped files that could not be read (each was reported as it happened)
 * @param exitStatus xlac dump's exit status
 * @param whyNew why each graph the run added to the cache was new ({@link WhyNew}); empty when none was
 * @param recording what was recorded through the runtime proxy ({@link TraceSpec#recording()}), or null
 */
public record CaptureResult(NotRunnable notRunnable, List<String> notes, String summary,
    Map<String, Integer> alreadyCompiled, Path keptDumps, CommandEnding ending, int unreadable, int exitStatus,
    WhyNew.Summary whyNew, RecordingResult recording) {

  public static CaptureResult notRunnable(NotRunnable why) {
    return new CaptureResult(why, List.of(), "", Map.of(), null, null, 0, why.status(), WhyNew.Summary.NONE, null);
  }
}
