/**
 * The S3 side of the cache's remote tier (docs/cache-remote.md), internal to the cache: other modules use
 * it through the door in the root package ({@link dev.xlac.cache.TieredCache} for a run's lookups and stores,
 * {@link dev.xlac.cache.CacheRemote} for the remote on its own). Here: {@link dev.xlac.cache.remote.RemoteTier} (the
 * one owner of the S3 client), the objects and their keys ({@link dev.xlac.cache.remote.RemoteObjects}), push and
 * pull ({@link dev.xlac.cache.remote.RemoteSync}), a run's read-through and write-through
 * ({@link dev.xlac.cache.remote.RemoteSession}), {@code ls --remote} ({@link dev.xlac.cache.remote.RemoteListing}).
 * Like {@code layout}, it uses the cache through the {@link dev.xlac.cache.CacheStore} facade only, and never the
 * door above it.
 */
package dev.xlac.cache.remote;
