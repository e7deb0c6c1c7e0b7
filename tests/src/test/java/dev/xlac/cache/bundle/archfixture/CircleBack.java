package dev.xlac.cache.bundle.archfixture;

import dev.xlac.cache.ops.archfixture.CircleOut;

/**
 * The other half of {@link CircleOut}'s circle (bundle back to ops). Test sources only; never part of the product.
 */
public final class CircleBack {
  private CircleBack() {}

  public static int depth(int n) {
    return n <= 0 ? 0 : 1 + CircleOut.depth(n - 1);
  }
}
