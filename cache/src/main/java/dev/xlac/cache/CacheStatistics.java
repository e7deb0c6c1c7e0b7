package dev.xlac.cache;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.OptionalLong;

/**
 * What {@code cache stat} reports, as ccache's {@code -s} does: contents, sizes, usage counters.
 *
 * @param schemaVersion the cache's schema version; 0 when the directory holds no cache yet (read-only opens create none)
 * @param pendingGraphs graphs that no compiler has produced anything for
 * @param storedBytes what the entries occupy (compressed graphs, artifacts, compressed logs)
 * @param rawBytes the same uncompressed
 * @param diskBytes what the database directory occupies on disk (includes not yet collected garbage)
 * @param timeSaved the recorded compile time of every hit
 * @param countersSince when the usage counters were last zeroed
 * @param diskReserveBytes the size of the cache's disk reserve ({@code DIR/reserve}, see docs/cache-safety.md);
 *     0 when there is none, and then {@code diskReserveNote} says why
 * @param runtimeEntries recorded PJRT compile requests with their executables (schema version 4)
 * @param runtimeBytes what they occupy (compressed requests and executables; part of {@code storedBytes})
 * @param runtimeHits compiles the runtime served from a layout of this cache ({@code xlac run}), since
 *     {@code countersSince}
 * @param runtimeTimeSaved the original compile time of those hits
 * @param pendingRuntimeHitRecords runs whose runtime hits wait in the cache directory to be counted by the next
 *     process that opens the cache for writing (they are not in {@code runtimeHits} yet)
 */
public record CacheStatistics(Path directory, int schemaVersion, long graphs, long pendingGraphs, long compiled,
    long failed, long hloRawBytes, long hloStoredBytes, long artifactBytes, long storedBytes, long rawBytes,
    long diskBytes, OptionalLong maxSize, long hits, long misses, Duration timeSaved, long cleanups,
    long damagedReads, Instant countersSince, long diskReserveBytes, String diskReserveNote, long runtimeEntries,
    long runtimeBytes, long runtimeHits, Duration runtimeTimeSaved, long pendingRuntimeHitRecords) {}
