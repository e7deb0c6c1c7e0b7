package dev.xlac.pipeline.shard;

import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * What every engine of a sharded compile shares ({@link ShardedCompiles}).
 *
 * @param shards the most shards (a run with fewer programs to compile makes fewer)
 * @param taskRetries how many times a shard whose task ended without results is submitted again
 * @param sharedDir a directory every node sees; each run makes a directory of its own in it
 * @param poll how often the engine's queue and the results are looked at
 * @param progress one line at a time, for stderr
 */
public record ShardSettings(int shards, int taskRetries, Path sharedDir, Duration poll, Consumer<String> progress) {}
