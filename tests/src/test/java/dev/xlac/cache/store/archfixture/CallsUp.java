package dev.xlac.cache.store.archfixture;

import dev.xlac.cache.CacheStore;

/**
 * A store-side class that calls up into the facade: what {@code CacheRulesTest}'s store rule must report. Test
 * sources only; never part of the product.
 */
public final class CallsUp {
  private CallsUp() {}

  /** The wrong way: the store asking the facade. */
  public static long graphs(CacheStore facade) {
    return facade.graphs().size();
  }
}
