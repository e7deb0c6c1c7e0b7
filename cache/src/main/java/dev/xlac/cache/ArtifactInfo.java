package dev.xlac.cache;

import java.time.Duration;
import java.time.Instant;

/**
 * The metadata of one artifact entry, compiled or failed, without its bytes.
 *
 * @param failureKind for a failed entry, the driver's classification (e.g. {@code compile-error},
 *     {@code oom-killed}, {@code timeout}); null otherwise
 */
public record ArtifactInfo(ArtifactKey key, EntryStatus status, long bytes, Duration compileTime, Instant created,
    Instant lastAccess, String failureKind, String failureMessage, long logBytes) {}
