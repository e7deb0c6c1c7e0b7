package dev.xlac.cli.cache;

import dev.xlac.cache.BundleSigningKey;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(name = "keygen", mixinStandardHelpOptions = true,
    description = {"Make an Ed25519 key pair for signing bundles, and print its key id (the SHA-256 of the public"
        + " key), which messages name.",
        "PREFIX.key is the private key (PKCS#8 PEM, readable by its owner only). Keep it where bundles are made,"
        + " for example as a CI secret, and sign with 'xlac cache export --sign PREFIX.key'.",
        "PREFIX.pub is the public key (X.509 PEM). Give it to the machines that import, with 'xlac cache config"
        + " trust add PREFIX.pub' or 'xlac cache import --trust PREFIX.pub'."},
    footer = {"%nAn existing PREFIX.key or PREFIX.pub is not replaced unless --force is given. Bundles signed with"
        + " a replaced key still verify against its old public key wherever that is trusted. The trust model is"
        + " described in docs/bundles.md."})
final class CacheKeygenCommand implements Callable<Integer> {
  @Parameters(paramLabel = "PREFIX", description = "Where to write the pair: PREFIX.key and PREFIX.pub (e.g. ci-bundles).")
  Path prefix;

  @Option(names = "--force", description = "Replace PREFIX.key and PREFIX.pub if they exist.")
  boolean force;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    BundleSigningKey.GeneratedKeyPair pair = BundleSigningKey.generate(prefix, force);
    PrintWriter out = spec.commandLine().getOut();
    out.printf("Wrote %s (private key: keep it secret) and %s (public key)%n", pair.privateKeyFile(),
        pair.publicKeyFile());
    out.printf("Key id: %s%n", pair.key().id());
    out.flush();
    return 0;
  }
}
