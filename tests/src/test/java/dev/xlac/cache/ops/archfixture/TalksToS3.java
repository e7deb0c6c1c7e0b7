package dev.xlac.cache.ops.archfixture;

import dev.xlac.cache.store.Store;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A class outside the remote tier that talks to S3 itself, and names the store: what {@code CacheRulesTest}'s S3 rule
 * must report (and, moved into {@code remote}, its facade rule). Test sources only; never part of the product.
 */
public final class TalksToS3 {
  private TalksToS3() {}

  /** The wrong way twice over. */
  public static String describe(Store store, S3Client client) {
    return store + " " + client;
  }
}
