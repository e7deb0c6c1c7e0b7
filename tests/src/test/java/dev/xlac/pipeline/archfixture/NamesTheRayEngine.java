package dev.xlac.pipeline.archfixture;

import dev.xlac.pipeline.ray.RaySettings;

/**
 * A pipeline class outside the Ray engine's package that reaches into it: what {@code ExecutorRulesTest} must report.
 * Test sources only.
 */
public final class NamesTheRayEngine {
  private NamesTheRayEngine() {}

  public static int shards(RaySettings ray) {
    return ray.shards().shards();
  }
}
