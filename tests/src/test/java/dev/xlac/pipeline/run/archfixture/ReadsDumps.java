package dev.xlac.pipeline.run.archfixture;

import dev.xlac.pipeline.sources.PathSource;
import java.nio.file.Path;
import java.util.List;

/** An {@code xlac run} class that reads graphs from dumps (a graph source's work): what {@code PipelineRulesTest} must
 * report. */
public final class ReadsDumps {
  private ReadsDumps() {}

  public static int modules(List<Path> paths) throws InterruptedException {
    return PathSource.read(paths, m -> m).reads().size();
  }
}
