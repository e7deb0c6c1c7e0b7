package dev.xlac.cache.remote;

import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * One connection to the shared S3 tier: the one owner of its {@link S3Client} (closed by {@link #close}), and the
 * one place that turns what S3 says into xlac's terms. Objects are read whole, written only when absent
 * ({@code If-None-Match: *}: S3's PreconditionFailed means another writer put the same content-addressed object
 * first, which is success), and listed by prefix.
 *
 * <p>A remote that cannot be reached, times out, or refuses access is <em>unavailable</em>: the first such failure
 * is one line, and every later call fails at once without touching the network. With {@link Options#required()}
 * that line is an {@link XlacException} of exit code 3; otherwise it goes to the warnings consumer once, and the
 * call throws {@link RemoteUnavailableException}, which callers count and go on without the remote. Thread-safe.
 */
public final class RemoteTier implements AutoCloseable {
  private final RemoteSetting setting;
  private final Options options;
  private final S3Client client;
  private final DefaultCredentialsProvider credentials;
  private volatile String unavailable;

  /**
   * How a tier behaves when the remote fails.
   *
   * @param connectTimeout how long a connection may take
   * @param readTimeout how long the remote may stay silent within a request
   * @param attempts how many times a request is tried (S3's standard retries, with backoff)
   * @param required a remote that is unavailable is fatal (exit code 3) rather than one warning
   * @param warnings receives the one warning line
   */
  public record Options(Duration connectTimeout, Duration readTimeout, int attempts, boolean required,
      Consumer<String> warnings) {
    /** 5 s to connect, 30 s of silence, 2 attempts. */
    public static Options defaults(boolean required, Consumer<String> warnings) {
      return new Options(Duration.ofSeconds(5), Duration.ofSeconds(30), 2, required, warnings);
    }
  }

  /** What a conditional put did. */
  public enum Put {
    /** The object was written. */
    WRITTEN,
    /** An object was already there under the key (S3's PreconditionFailed): written by someone else, same content. */
    ALREADY_THERE
  }

  /** One listed object: its key below the prefix, its size, when it was written. */
  public record Listed(String key, long size, Instant lastModified) {}

  private RemoteTier(RemoteSetting setting, Options options, S3Client client, DefaultCredentialsProvider credentials) {
    this.setting = setting;
    this.options = options;
    this.client = client;
    this.credentials = credentials;
  }

  /** Makes the client (no request is sent yet); credentials come from AWS's default chain. */
  public static RemoteTier open(RemoteSetting setting, Options options) {
    // The client does not close a provider it is given: the tier owns it, and closes it with the client.
    DefaultCredentialsProvider credentials = DefaultCredentialsProvider.builder().build();
    S3ClientBuilder b = S3Client.builder()
        .httpClientBuilder(UrlConnectionHttpClient.builder()
            .connectionTimeout(options.connectTimeout())
            .socketTimeout(options.readTimeout()))
        .credentialsProvider(credentials)
        .region(region(setting.endpoint().isPresent()))
        // Our own SHA-256 covers every object end to end; S3's optional trailing checksums (aws-chunked uploads)
        // are not understood alike by every S3-compatible store.
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .overrideConfiguration(o -> o.retryStrategy(
            AwsRetryStrategy.standardRetryStrategy().toBuilder().maxAttempts(options.attempts()).build()));
    if (setting.endpoint().isPresent()) {
      b.endpointOverride(setting.endpoint().get()).forcePathStyle(true);
    } else {
      b.crossRegionAccessEnabled(true);
    }
    return new RemoteTier(setting, options, b.build(), credentials);
  }

  /**
   * The region of AWS's chain (AWS_REGION, a profile, the instance); us-east-1 where none is set. With an endpoint
   * of its own (an S3-compatible store) only AWS_REGION or {@code aws.region} counts, so no instance is asked.
   */
  private static Region region(boolean customEndpoint) {
    String named = System.getProperty("aws.region", System.getenv("AWS_REGION"));
    if (named != null && !named.isBlank()) {
      return Region.of(named.strip());
    }
    if (customEndpoint) {
      return Region.US_EAST_1;
    }
    try {
      return new DefaultAwsRegionProviderChain().getRegion();
    } catch (SdkClientException e) {
      return Region.US_EAST_1;
    }
  }

  public RemoteSetting setting() {
    return setting;
  }

  /** Whether a failure made the remote unavailable; then {@link #unavailableReason()} says why. */
  public boolean available() {
    return unavailable == null;
  }

  public String unavailableReason() {
    return unavailable;
  }

  /** Checks that the bucket can be listed under the prefix (one small request). */
  public void check() throws RemoteUnavailableException, InterruptedException {
    call("listing " + setting.url(), () -> client.listObjectsV2(ListObjectsV2Request.builder()
        .bucket(setting.bucket()).prefix(setting.key("v1/")).maxKeys(1).build()));
  }

  /** The object under {@code key} (below the prefix), whole; empty when there is none. */
  public Optional<byte[]> get(String key) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(key);
    return call("reading " + full, () -> {
      try (ResponseInputStream<GetObjectResponse> in = client.getObject(GetObjectRequest.builder()
          .bucket(setting.bucket()).key(full).build())) {
        GetObjectResponse r = in.response();
        if (r.contentLength() != null && r.contentLength() > RemoteObjects.MAX_OBJECT_BYTES) {
          throw new IOException("s3://" + setting.bucket() + "/" + full + " is " + r.contentLength()
              + " bytes, over the " + RemoteObjects.MAX_OBJECT_BYTES + " bytes the remote tier takes");
        }
        return Optional.of(in.readAllBytes());
      } catch (NoSuchKeyException e) {
        return Optional.<byte[]>empty();
      } catch (S3Exception e) {
        if (isMiss(e)) {
          return Optional.<byte[]>empty();
        }
        throw e; // NoSuchBucket among them: a misnamed bucket is not a miss for every key, it is the remote unusable
      }
    });
  }

  /** A 404 for the object (NoSuchKey, or no code at all); not a 404 for the bucket (NoSuchBucket). */
  static boolean isMiss(S3Exception e) {
    String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
    return e.statusCode() == 404 && !"NoSuchBucket".equals(code);
  }

  /** Writes {@code body} under {@code key} unless an object is there already ({@code If-None-Match: *}). */
  public Put putIfAbsent(String key, byte[] body) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(key);
    return call("writing " + full, () -> conditionalPut(() -> client.putObject(PutObjectRequest.builder()
        .bucket(setting.bucket()).key(full).ifNoneMatch("*").contentLength((long) body.length).build(),
        RequestBody.fromBytes(body))));
  }

  /** As {@link #putIfAbsent(String, byte[])}, streaming the file's bytes (a file of any size). */
  public Put putFileIfAbsent(String key, java.nio.file.Path file) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(key);
    return call("writing " + full, () -> conditionalPut(() -> client.putObject(PutObjectRequest.builder()
        .bucket(setting.bucket()).key(full).ifNoneMatch("*").build(), RequestBody.fromFile(file))));
  }

  /**
   * Writes {@code body} under {@code key} only while the object there is still the one of {@code etag}
   * ({@code If-Match}): the repair of a damaged object, which must not replace one that another writer repaired
   * first. {@link Put#ALREADY_THERE} when the object changed (PreconditionFailed) or is gone.
   */
  public Put replace(String key, String etag, byte[] body) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(key);
    return call("replacing " + full, () -> {
      try {
        return conditionalPut(() -> client.putObject(PutObjectRequest.builder().bucket(setting.bucket()).key(full)
            .ifMatch(etag).contentLength((long) body.length).build(), RequestBody.fromBytes(body)));
      } catch (S3Exception e) {
        if (e.statusCode() == 404 && "NoSuchKey".equals(e.awsErrorDetails() == null ? null
            : e.awsErrorDetails().errorCode())) {
          return Put.ALREADY_THERE;
        }
        throw e;
      }
    });
  }

  /** The object under {@code key} whole, with its ETag; empty when there is none. */
  public Optional<Tagged> getTagged(String key) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(key);
    return call("reading " + full, () -> {
      try (ResponseInputStream<GetObjectResponse> in = client.getObject(GetObjectRequest.builder()
          .bucket(setting.bucket()).key(full).build())) {
        if (in.response().contentLength() != null && in.response().contentLength() > RemoteObjects.MAX_OBJECT_BYTES) {
          throw new IOException("s3://" + setting.bucket() + "/" + full + " is " + in.response().contentLength()
              + " bytes, over the " + RemoteObjects.MAX_OBJECT_BYTES + " bytes the remote tier takes");
        }
        return Optional.of(new Tagged(in.readAllBytes(), in.response().eTag()));
      } catch (S3Exception e) {
        if (isMiss(e)) {
          return Optional.<Tagged>empty();
        }
        throw e;
      }
    });
  }

  /** An object's bytes and its ETag (S3's quoted form, as If-Match takes it). */
  public record Tagged(byte[] bytes, String etag) {}

  /** One conditional write, sent by {@code put}. */
  interface ConditionalPut {
    void send() throws IOException;
  }

  /** The most tries of a conditional write that S3 answers with 409 ConditionalRequestConflict. */
  static final int CONFLICT_ATTEMPTS = 5;

  /**
   * Sends a conditional write: S3's 412 PreconditionFailed is {@link Put#ALREADY_THERE}; 409
   * ConditionalRequestConflict (another conditional write of the key in flight) is tried again with a growing pause,
   * up to {@link #CONFLICT_ATTEMPTS} times.
   */
  static Put conditionalPut(ConditionalPut put) throws IOException, InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        put.send();
        return Put.WRITTEN;
      } catch (S3Exception e) {
        if (e.statusCode() == 412) {
          return Put.ALREADY_THERE;
        }
        if (e.statusCode() == 409 && attempt < CONFLICT_ATTEMPTS) {
          Thread.sleep(100L * attempt);
          continue;
        }
        throw e;
      }
    }
  }

  /** Every object under {@code prefix} (below the tier's prefix), in key order, keys below the tier's prefix. */
  public List<Listed> list(String prefix) throws RemoteUnavailableException, InterruptedException {
    String full = setting.key(prefix);
    int cut = setting.prefix().isEmpty() ? 0 : setting.prefix().length() + 1;
    return call("listing " + full, () -> {
      List<Listed> out = new ArrayList<>();
      for (ListObjectsV2Response page : client.listObjectsV2Paginator(ListObjectsV2Request.builder()
          .bucket(setting.bucket()).prefix(full).build())) {
        for (S3Object o : page.contents()) {
          out.add(new Listed(o.key().substring(cut), o.size() == null ? 0 : o.size(), o.lastModified()));
        }
      }
      return out;
    });
  }

  /** The full {@code s3://} address of an object, for messages. */
  public String address(String key) {
    return "s3://" + setting.bucket() + "/" + setting.key(key);
  }

  private interface Call<T> {
    T run() throws IOException, InterruptedException;
  }

  private <T> T call(String what, Call<T> call) throws RemoteUnavailableException, InterruptedException {
    String down = unavailable;
    if (down != null) {
      throw new RemoteUnavailableException(down);
    }
    try {
      return call.run();
    } catch (AbortedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedException("interrupted while " + what);
    } catch (SdkException | IOException e) {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while " + what);
      }
      throw unavailable(what, e);
    }
  }

  private RemoteUnavailableException unavailable(String what, Exception e) {
    String line = "remote " + setting.describe() + ": " + reason(e) + " (while " + what + ")";
    synchronized (this) {
      if (unavailable != null) {
        return new RemoteUnavailableException(unavailable);
      }
      unavailable = line;
    }
    if (options.required()) {
      throw XlacException.environment(line);
    }
    options.warnings().accept(line + "; going on without it for the rest of this command (--require-remote makes"
        + " this fatal)");
    return new RemoteUnavailableException(line);
  }

  /** What went wrong, in one line and in S3's words where it gave some. */
  static String reason(Exception e) {
    if (e instanceof S3Exception s) {
      String code = s.awsErrorDetails() == null ? null : s.awsErrorDetails().errorCode();
      String message = s.awsErrorDetails() == null ? null : s.awsErrorDetails().errorMessage();
      String said = "S3 said " + s.statusCode() + (code == null ? "" : " " + code)
          + (message == null || message.isBlank() ? "" : ": " + message.strip());
      if (s.statusCode() == 403 || s.statusCode() == 401) {
        return "access refused (" + said + "); check the AWS credentials (AWS_ACCESS_KEY_ID and"
            + " AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance role) and the bucket's policy";
      }
      if ("NoSuchBucket".equals(code)) {
        return "the bucket does not exist (" + said + ")";
      }
      return said;
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return "cannot connect (" + t.getMessage() + ")";
      }
      if (t instanceof SocketTimeoutException) {
        return "timed out (" + t.getMessage() + ")";
      }
      if (t instanceof UnknownHostException) {
        return "unknown host " + t.getMessage();
      }
      if (t instanceof SocketException || t instanceof IOException && t.getMessage() != null
          && t.getMessage().startsWith("Error writing request body")) { // a server that went away mid-request
        return "the connection broke (" + t.getMessage() + ")";
      }
    }
    String m = e.getMessage() == null || e.getMessage().isBlank()
        ? "the S3 client failed without saying why (--verbose shows the trace)" : e.getMessage();
    if (m.contains("Unable to load credentials")) {
      return "no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run with an"
          + " instance role)";
    }
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }

  @Override
  public void close() {
    try {
      client.close();
    } finally {
      credentials.close();
    }
  }
}
