package dev.xlac.cache;

import java.time.Duration;
import java.time.Instant;

/**
 * A compiled artifact as the cache hands it back: its bytes have just been checked against the
 * checksum recorded when it was stored. The array may be shared with other callers: do not modify it.
 */
public record Artifact(ArtifactKey key, byte[] bytes, Duration compileTime, Instant created) {}
