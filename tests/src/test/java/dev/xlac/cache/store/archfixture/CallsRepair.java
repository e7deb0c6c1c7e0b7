package dev.xlac.cache.store.archfixture;

import dev.xlac.cache.VerifyReport;
import dev.xlac.cache.repair.CacheVerifier;
import dev.xlac.cache.store.Store;

/**
 * A store-side class that calls into the repair package: what {@code CacheRulesTest}'s store-under-repair rule must
 * report. Test sources only; never part of the product.
 */
public final class CallsRepair {
  private CallsRepair() {}

  /** The wrong way: the engine asking the repair that is built on it. */
  public static VerifyReport check(Store store) {
    return CacheVerifier.run(store, false);
  }
}
