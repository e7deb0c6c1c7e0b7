package dev.xlac.cache.ops.archfixture;

import dev.xlac.cache.bundle.archfixture.CircleBack;

/**
 * Half of a two-package circle in the cache (ops to bundle and back): what {@code CacheRulesTest}'s cycle rule must
 * report. Test sources only; never part of the product.
 */
public final class CircleOut {
  private CircleOut() {}

  public static int depth(int n) {
    return n <= 0 ? 0 : 1 + CircleBack.depth(n - 1);
  }
}
