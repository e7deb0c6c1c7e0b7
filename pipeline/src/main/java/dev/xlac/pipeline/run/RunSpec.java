package dev.xlac.pipeline.run;

import dev.xlac.cache.RemotePolicy;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What {@code xlac run} is asked to do.
 *
 * @param command the training command and its arguments
 * @param cacheDir the cache directory (its runtime layout is {@code CACHE/runtime/pjrt})
 * @param plugin the real PJRT plugin ({@code --plugin}); null: {@code $XLAC_PJRT_PLUGIN}
 * @param layout serve from this runtime layout as it is ({@code --layout DIR}, written by
 *     {@code cache materialize --layout pjrt}); null: the cache's own, brought up to date first
 * @param record record every compile the layout did not serve, and put it into the cache at the end
 * @param env the user's environment
 * @param remote whether the run uses the cache's remote tier ({@link RuntimeRemote}): {@code USE} (when it has one),
 *     {@code OFF} ({@code --no-remote}), {@code REQUIRE} ({@code --require-remote})
 */
public record RunSpec(List<String> command, Path cacheDir, Path plugin, Path layout, boolean record,
    Map<String, String> env, RemotePolicy remote) {
  public RunSpec {
    command = List.copyOf(command);
    env = Map.copyOf(env);
  }

  /** A run that uses the cache's remote tier when it has one. */
  public RunSpec(List<String> command, Path cacheDir, Path plugin, Path layout, boolean record,
      Map<String, String> env) {
    this(command, cacheDir, plugin, layout, record, env, RemotePolicy.USE);
  }
}
