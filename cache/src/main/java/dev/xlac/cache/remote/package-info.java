/**
 * The shared S3 tier of the cache (docs/cache.md "The remote tier"): {@link dev.xlac.cache.remote.RemoteTier} (the
 * one owner of the S3 client), the objects and their keys ({@link dev.xlac.cache.remote.RemoteObjects}), push and
 * pull ({@link dev.xlac.cache.remote.RemoteSync}), a compile run's read-through and write-through
 * ({@link dev.xlac.cache.remote.RemoteSession}), {@code ls --remote} ({@link dev.xlac.cache.remote.RemoteListing}).
 * Like {@code layout}, it uses the cache through the {@link dev.xlac.cache.CacheStore} facade only.
 */
package dev.xlac.cache.remote;
