package dev.xlac.cache.remote;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.TrustSettings;

/**
 * Whether the cache takes a remote object, by the trust settings of signed bundles ({@code cache config
 * require-signed}, {@code cache config trust}): with {@code require-signed off} any intact object (a signature, when
 * there is one, is always checked, by {@link RemoteObjects#open}); with it on, only objects signed by a trusted key.
 * Remote objects are unsigned unless {@code cache push --sign KEYFILE} signed them.
 */
record RemoteTrust(TrustSettings settings) {
  static RemoteTrust of(CacheStore store) {
    return new RemoteTrust(store.trustSettings());
  }

  void check(RemoteObjects.Envelope e) throws RemoteObjects.BadObjectException {
    if (!settings.requireSigned()) {
      return;
    }
    if (e.signer() == null) {
      throw new RemoteObjects.BadObjectException("it is not signed, and the cache has require-signed on (push it with"
          + " 'xlac cache push --sign KEYFILE')");
    }
    boolean trusted = settings.keys().stream().anyMatch(k -> k.key().equals(e.signer()));
    if (!trusted) {
      throw new RemoteObjects.BadObjectException("it is signed by key " + e.signer().id() + ", which the cache does"
          + " not trust ('xlac cache config trust add PUBKEY')");
    }
  }
}
