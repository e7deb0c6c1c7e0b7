package dev.xlac.cache;

import dev.xlac.cache.store.Store;
import dev.xlac.core.XlacException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The cache's shared S3 tier ({@code xlac cache config remote s3://BUCKET/PREFIX [--endpoint URL]}), kept in the
 * {@code meta} family beside the other settings as {@code config/remote} (the URL) and
 * {@code config/remote_endpoint} (absent: AWS's own endpoint for the bucket's region). The tier itself is
 * {@code dev.xlac.cache.remote.RemoteTier}.
 *
 * @param bucket the bucket
 * @param prefix the key prefix, without a leading or trailing slash ("" for none)
 * @param endpoint an S3-compatible endpoint (addressed path-style), or empty for AWS
 */
public record RemoteSetting(String bucket, String prefix, Optional<URI> endpoint) {
  static final byte[] KEY = "config/remote".getBytes(StandardCharsets.US_ASCII);
  static final byte[] ENDPOINT_KEY = "config/remote_endpoint".getBytes(StandardCharsets.US_ASCII);
  /** S3's bucket naming rules (3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end). */
  private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]");

  public RemoteSetting {
    if (!BUCKET.matcher(bucket).matches()) {
      throw new IllegalArgumentException("not an S3 bucket name: " + bucket);
    }
  }

  /**
   * Parses {@code s3://BUCKET[/PREFIX]} and an optional endpoint URL ({@code http(s)://host[:port]}); a bad one is
   * bad input naming what is wrong.
   */
  public static RemoteSetting parse(String url, String endpoint) {
    if (!url.startsWith("s3://")) {
      throw XlacException.badInput("the remote must be an S3 URL, s3://BUCKET/PREFIX, not '" + url + "'");
    }
    String rest = url.substring("s3://".length());
    int slash = rest.indexOf('/');
    String bucket = slash < 0 ? rest : rest.substring(0, slash);
    String prefix = slash < 0 ? "" : rest.substring(slash + 1);
    while (prefix.endsWith("/")) {
      prefix = prefix.substring(0, prefix.length() - 1);
    }
    if (!BUCKET.matcher(bucket).matches()) {
      throw XlacException.badInput("'" + bucket + "' in " + url + " is not an S3 bucket name (3 to 63 lowercase"
          + " letters, digits, dots and hyphens)");
    }
    if (prefix.startsWith("/") || prefix.contains("//")) {
      throw XlacException.badInput("the prefix in " + url + " has an empty path segment");
    }
    return new RemoteSetting(bucket, prefix, endpoint == null ? Optional.empty() : Optional.of(endpoint(endpoint)));
  }

  private static URI endpoint(String text) {
    try {
      URI u = new URI(text);
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
      if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null) {
        throw XlacException.badInput("--endpoint takes an http:// or https:// URL with a host, not '" + text + "'");
      }
      if (u.getRawUserInfo() != null) {
        throw XlacException.badInput("--endpoint must not carry credentials ('" + u.getScheme() + "://...@"
            + u.getHost() + "'): xlac takes them from AWS's chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,"
            + " AWS_PROFILE, or the instance role)");
      }
      return u;
    } catch (URISyntaxException e) {
      throw XlacException.badInput("--endpoint takes a URL, not '" + text + "': " + e.getReason());
    }
  }

  /** {@code s3://BUCKET/PREFIX}, as configured. */
  public String url() {
    return "s3://" + bucket + (prefix.isEmpty() ? "" : "/" + prefix);
  }

  /** The full key of an object under the prefix: {@code PREFIX/rest}. */
  public String key(String rest) {
    return prefix.isEmpty() ? rest : prefix + "/" + rest;
  }

  /** The setting as {@code cache config remote} prints it. */
  public String describe() {
    return url() + endpoint.map(e -> " --endpoint " + e).orElse("");
  }

  static Optional<RemoteSetting> read(Store store) {
    byte[] url = store.meta(KEY);
    if (url == null) {
      return Optional.empty();
    }
    byte[] endpoint = store.meta(ENDPOINT_KEY);
    try {
      return Optional.of(parse(new String(url, StandardCharsets.UTF_8),
          endpoint == null ? null : new String(endpoint, StandardCharsets.UTF_8)));
    } catch (XlacException e) {
      throw XlacException.environment("cache " + store.directory() + ": its remote setting cannot be read ("
          + e.getMessage() + "); set it again with 'xlac cache config remote s3://BUCKET/PREFIX'");
    }
  }

  /** Writes the setting, or removes it ({@code setting} empty). */
  static void write(Store store, Optional<RemoteSetting> setting) {
    store.commit(true, txn -> {
      if (setting.isEmpty()) {
        txn.deleteMeta(KEY);
        txn.deleteMeta(ENDPOINT_KEY);
      } else {
        txn.putMeta(KEY, setting.get().url().getBytes(StandardCharsets.UTF_8));
        if (setting.get().endpoint().isPresent()) {
          txn.putMeta(ENDPOINT_KEY, setting.get().endpoint().get().toString().getBytes(StandardCharsets.UTF_8));
        } else {
          txn.deleteMeta(ENDPOINT_KEY);
        }
      }
      return null;
    });
  }
}
