package dev.xlac.pipeline.archfixture;

import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.remote.RemoteTier;

/**
 * A class outside the cache that opens the S3 side of the remote tier itself instead of going through the cache's
 * door ({@code TieredCache}, {@code CacheRemote}): what {@code CacheRulesTest}'s one-door rule must report. Test
 * sources only.
 */
public final class OpensTheRemoteTierItself {
  private OpensTheRemoteTierItself() {}

  public static RemoteTier open(RemoteSetting setting) {
    return RemoteTier.open(setting, RemoteTier.Options.defaults(true, line -> {}));
  }
}
