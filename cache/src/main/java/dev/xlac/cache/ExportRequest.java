package dev.xlac.cache;

import java.time.Duration;

/**
 * What {@code cache export} puts in a bundle.
 *
 * @param compiler only artifacts of a matching compiler, and the graphs they were made from (null:
 *     every artifact and every graph, pending ones included, and every runtime entry; with a filter, no
 *     runtime entries: they are not made by a compiler identity)
 * @param since only artifacts recorded, graphs seen and runtime entries added within this long (null: all)
 * @param signer the key that signs the bundle ({@code --sign KEYFILE}; the bundle is then format
 *     version 3); null: unsigned
 */
public record ExportRequest(CompilerFilter compiler, Duration since, BundleSigningKey signer) {
  public ExportRequest(CompilerFilter compiler, Duration since) {
    this(compiler, since, null);
  }

  public static ExportRequest all() {
    return new ExportRequest(null, null);
  }

  /** The same selection, signed by {@code key}. */
  public ExportRequest signedBy(BundleSigningKey key) {
    return new ExportRequest(compiler, since, key);
  }
}
