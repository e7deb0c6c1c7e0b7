package dev.xlac.cache;

import java.nio.file.Path;

/**
 * What an export wrote ({@link CacheStore#exportBundle}).
 *
 * @param payloadBytes the stored bytes of the graphs, logs and artifacts it holds
 * @param fileBytes the size of the bundle file
 * @param requests runtime entries (recorded PJRT requests with their executables) it holds
 */
public record ExportResult(Path file, long graphs, long artifacts, long failures, long payloadBytes, long fileBytes,
    long requests) {}
