package dev.xlac.cache.remote.archfixture;

import dev.xlac.cache.store.Store;

/**
 * A remote-tier class that reaches past the facade into the store: what {@code CacheRulesTest}'s remote rule must
 * report. Test sources only; never part of the product.
 */
public final class ReachesTheStore {
  private ReachesTheStore() {}

  public static String describe(Store store) {
    return String.valueOf(store);
  }
}
