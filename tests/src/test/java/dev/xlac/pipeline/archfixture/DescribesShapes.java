package dev.xlac.pipeline.archfixture;

import dev.xlac.hlo.GraphDiff;

/**
 * A pipeline class that words a diff's shape change itself: what {@code DiffRulesTest} must report. Test
 * sources only, so the product import never sees it.
 */
public final class DescribesShapes {
  private DescribesShapes() {}

  public static String batchSize(GraphDiff d) {
    GraphDiff.DimChange c = d.parameters().getFirst().dims().getFirst();
    return "batch size (" + c.from() + " -> " + c.to() + ")";
  }
}
