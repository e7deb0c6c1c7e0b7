package dev.xlac.cache;

import dev.xlac.runtime.RequestKey;
import java.time.Duration;
import java.time.Instant;

/**
 * One recorded PJRT compile request in the cache (what {@code cache ls} lists as a runtime entry): the request's
 * key, what it was compiled for, its sizes and how often the runtime served its executable.
 *
 * @param format the program format ({@code mlir}, {@code hlo})
 * @param platformName the real plugin's platform name ({@code cpu}, {@code cuda})
 * @param pluginSha256 the SHA-256 of the real plugin file the executable was compiled with
 * @param programBytes the program's size
 * @param executableBytes the serialized executable's size
 * @param compileTime how long the original compile took (what each hit saves)
 * @param created when the request was added to the cache
 * @param lastAccess when it was added or last served (the hits {@code xlac run} reports); materializing does not change it
 * @param hits how many times the runtime served it (reported by {@code xlac run})
 * @param executableSha256 the executable's SHA-256, hex (what a layout entry's header carries)
 * @param storedBytes what the entry occupies in the cache (the compressed request and the executable)
 */
public record RequestInfo(RequestKey key, String format, String platformName, String pluginSha256,
    long programBytes, long executableBytes, Duration compileTime, Instant created, Instant lastAccess,
    long hits, String executableSha256, long storedBytes) {}
