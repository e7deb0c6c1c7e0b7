package dev.xlac.cache;

import java.util.List;

/** Everything recorded about one graph: its metadata and, per compiler, the entry and its log. */
public record GraphLog(GraphInfo graph, List<Entry> artifacts) {
  public record Entry(ArtifactInfo info, String log) {}
}
