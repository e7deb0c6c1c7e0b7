package dev.xlac.cache.remote;

import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.core.XlacException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** {@code xlac cache ls --remote}: every object of the remote tier, by kind, with its size. */
public final class RemoteListing {
  private RemoteListing() {}

  /**
   * One object.
   *
   * @param kind graph, artifact or runtime
   * @param name a graph's fingerprint, an artifact's {@code fingerprint/compiler-id}, a runtime entry's
   *     {@code plugin-sha256/request-key} (an older xlac's: the request key alone)
   * @param key the object's key below the prefix
   */
  public record Row(String kind, String name, String key, long bytes, Instant lastModified) {}

  /** Every object under the tier's {@code v1/}, graphs first, then artifacts, then runtime entries; exit 3 when the remote fails. */
  public static List<Row> list(RemoteTier tier) throws InterruptedException {
    List<Row> rows = new ArrayList<>();
    try {
      for (RemoteObjects.Kind k : RemoteObjects.Kind.values()) {
        for (RemoteTier.Listed o : tier.list(k.keyPrefix())) {
          String name = o.key().substring(k.keyPrefix().length());
          String kind = switch (k) {
            case GRAPH -> "graph";
            case ARTIFACT -> "artifact";
            case RUNTIME -> "runtime";
          };
          rows.add(new Row(kind, name, o.key(), o.size(), o.lastModified()));
        }
      }
    } catch (RemoteUnavailableException e) {
      throw XlacException.environment(e.getMessage());
    }
    return rows;
  }
}
