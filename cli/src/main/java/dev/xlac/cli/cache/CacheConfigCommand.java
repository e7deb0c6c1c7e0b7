package dev.xlac.cli.cache;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.ImportLimit;
import dev.xlac.cache.Quantities;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.TrustSettings;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "config", mixinStandardHelpOptions = true,
    description = {"Show or change a cache setting; without a value, the setting is printed.",
        "%nSettings:",
        "max-size [SIZE|none]: the size the cache is trimmed to (least recently used first) after every write, as"
        + " ccache does.",
        "require-signed [on|off]: when on, 'xlac cache import' refuses every bundle that is not signed by a"
        + " trusted key.",
        "trust [list | add PUBKEY | remove KEYID]: the public keys whose signed bundles the cache trusts. 'add'"
        + " takes a PREFIX.pub file from 'xlac cache keygen'; 'remove' takes a key id as 'list' shows it, or its"
        + " first 8 or more hex digits.",
        "import-max-unpacked [SIZE|none|default]: 'xlac cache import' refuses a bundle that unpacks to more (its"
        + " entries plus the modules and logs decompressed to check them); default 1 TiB.",
        "remote [s3://BUCKET/PREFIX [--endpoint URL] | none]: the shared S3 tier that compile runs read through to"
        + " and write through to, and that 'xlac cache push' and 'pull' use; --endpoint names an S3-compatible store"
        + " (addressed path-style). Credentials come from the AWS chain: environment, profile, instance role."},
    footer = {"%nExamples: 'xlac cache config max-size 50G', 'xlac cache config max-size none', 'xlac cache config"
        + " trust add ci.pub', 'xlac cache config require-signed on', 'xlac cache config trust list', 'xlac cache"
        + " config import-max-unpacked 200G', 'xlac cache config remote s3://team-cache/xlac', 'xlac cache config remote"
        + " s3://xlac/ci --endpoint http://seaweed:8333', 'xlac cache config remote none'.",
        "%nThe settings live in the cache directory, so whoever can write that directory can change them"
        + " (docs/bundles.md, 'Trust model')."})
final class CacheConfigCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "KEY",
      description = "max-size, require-signed, trust, import-max-unpacked or remote.")
  String key;

  @Parameters(index = "1..*", arity = "0..2", paramLabel = "VALUE",
      description = "The new value: a size (50G, 500MiB) or none; on or off; list, add PUBKEY or remove KEYID.")
  List<String> values = new ArrayList<>();

  @Option(names = "--endpoint", paramLabel = "URL",
      description = "With 'remote': the endpoint of an S3-compatible store (http://host:port); default AWS.")
  String endpoint;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    if (endpoint != null && !key.equals("remote")) {
      throw XlacException.badInput("--endpoint goes with 'cache config remote s3://BUCKET/PREFIX', not with " + key);
    }
    switch (key) {
      case "max-size" -> maxSize(value("a size (50G, 500MiB) or none"));
      case "require-signed" -> requireSigned(value("on or off"));
      case "trust" -> trust();
      case "import-max-unpacked" -> importMaxUnpacked(value("a size (500G, 2TiB), none or default"));
      case "remote" -> remote(value("s3://BUCKET/PREFIX or none"));
      default -> throw XlacException.badInput("unknown cache setting '" + key + "' (known: max-size, require-signed,"
          + " trust, import-max-unpacked, remote)");
    }
    cache.out().flush();
    return 0;
  }

  /** The one value of a single-valued setting, or null to print it. */
  private String value(String expected) {
    if (values.size() > 1) {
      throw XlacException.badInput("cache config " + key + " takes one value (" + expected + "), not "
          + values.size());
    }
    return values.isEmpty() ? null : values.getFirst();
  }

  private void maxSize(String value) throws InterruptedException {
    if (value == null) {
      try (CacheStore store = cache.openReadOnly()) {
        cache.out().println(describe(store.maxSize()));
      }
      return;
    }
    OptionalLong max;
    try {
      max = value.equals("none") ? OptionalLong.empty() : OptionalLong.of(Quantities.parseSize(value));
    } catch (IllegalArgumentException e) {
      throw XlacException.badInput(e.getMessage());
    }
    try (CacheStore store = cache.openWritable()) {
      store.setMaxSize(max);
    }
    cache.out().println("max-size " + describe(max));
  }

  private static String describe(OptionalLong max) {
    return max.isEmpty() ? "none" : max.getAsLong() + " (" + Sizes.human(max.getAsLong()) + ")";
  }

  /** A size, or {@code none} (empty); {@code what} names the option or setting in the refusal. */
  static OptionalLong sizeOrNone(String value, String what) {
    if (value.equals("none")) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Quantities.parseSize(value));
    } catch (IllegalArgumentException e) {
      throw XlacException.badInput(what + " takes a size (500G, 2TiB, 1048576) or none, not '" + value + "'");
    }
  }

  private void importMaxUnpacked(String value) throws InterruptedException {
    ImportLimit limit;
    if (value == null) {
      try (CacheStore store = cache.openReadOnly()) {
        limit = store.importMaxUnpacked();
      }
    } else {
      limit = value.equals("default") ? ImportLimit.defaults()
          : ImportLimit.setting(sizeOrNone(value, "cache config import-max-unpacked"));
      try (CacheStore store = cache.openWritable()) {
        store.setImportMaxUnpacked(limit);
      }
    }
    cache.out().println("import-max-unpacked " + limit.describe()
        + (limit.source() == ImportLimit.Source.DEFAULT ? ", the default" : ""));
  }

  private void remote(String value) throws InterruptedException {
    if (value == null) {
      if (endpoint != null) {
        throw XlacException.badInput("--endpoint needs the remote's URL: cache config remote s3://BUCKET/PREFIX"
            + " --endpoint " + endpoint);
      }
      try (CacheStore store = cache.openReadOnly()) {
        cache.out().println("remote " + store.remoteSetting().map(RemoteSetting::describe).orElse("none"));
      }
      return;
    }
    Optional<RemoteSetting> setting;
    if (value.equals("none")) {
      if (endpoint != null) {
        throw XlacException.badInput("--endpoint does not go with 'remote none'");
      }
      setting = Optional.empty();
    } else {
      setting = Optional.of(RemoteSetting.parse(value, endpoint));
    }
    try (CacheStore store = cache.openWritable()) {
      store.setRemoteSetting(setting);
    }
    cache.out().println("remote " + setting.map(RemoteSetting::describe).orElse("none"));
  }

  private void requireSigned(String value) throws InterruptedException {
    if (value == null) {
      try (CacheStore store = cache.openReadOnly()) {
        cache.out().println("require-signed " + (store.trustSettings().requireSigned() ? "on" : "off"));
      }
      return;
    }
    if (!value.equals("on") && !value.equals("off")) {
      throw XlacException.badInput("cache config require-signed takes on or off, not '" + value + "'");
    }
    try (CacheStore store = cache.openWritable()) {
      store.setRequireSigned(value.equals("on"));
      if (value.equals("on") && store.trustSettings().keys().isEmpty()) {
        cache.notices().accept("no key is trusted yet, so every bundle is refused until one is ('xlac cache config"
            + " trust add PUBKEY') or an import names one ('--trust PUBKEY')");
      }
    }
    cache.out().println("require-signed " + value);
  }

  private void trust() throws InterruptedException {
    String action = values.isEmpty() ? "list" : values.getFirst();
    int wanted = action.equals("list") ? 1 : 2;
    if (!List.of("list", "add", "remove").contains(action) || values.size() > wanted
        || (wanted == 2 && values.size() < 2)) {
      throw XlacException.badInput("cache config trust takes 'list', 'add PUBKEY' or 'remove KEYID'");
    }
    PrintWriter out = cache.out();
    if (action.equals("list")) {
      try (CacheStore store = cache.openReadOnly()) {
        for (TrustSettings.TrustedKey k : store.trustSettings().keys()) {
          out.printf("%s  %s  added %s UTC%n", k.key().id(), k.label(), Tables.time(k.added()));
        }
      }
    } else if (action.equals("add")) {
      Path file = Path.of(values.get(1));
      BundleKey k = BundleKey.read(file);
      try (CacheStore store = cache.openWritable()) {
        boolean added = store.trustKey(k, String.valueOf(file.getFileName()));
        out.println((added ? "Trusted key " : "Key is trusted already: ") + k.id());
      }
    } else {
      try (CacheStore store = cache.openWritable()) {
        TrustSettings.TrustedKey gone = store.untrustKey(values.get(1));
        if (gone == null) {
          out.printf("Removed the damaged record of trusted key %s%n", values.get(1).strip());
        } else {
          out.printf("Removed trusted key %s (%s)%n", gone.key().id(), gone.label());
        }
      }
    }
  }
}
