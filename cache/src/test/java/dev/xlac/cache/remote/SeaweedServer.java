package dev.xlac.cache.remote;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * A real S3 server for tests: SeaweedFS's {@code weed mini} ({@code $XLAC_WEED}, pinned in the project's
 * environment), on free ports of 127.0.0.1, with one bucket and one identity whose keys the test knows (so wrong
 * keys are refused). Start it once per test class ({@link #start}, bounded in time), stop it with {@link #close}
 * (the process and its data directory's files go with the test's temporary directory).
 */
public final class SeaweedServer implements AutoCloseable {
  /** How long {@code weed mini} may take to serve S3 requests. */
  static final Duration START_LIMIT = Duration.ofSeconds(90);

  private final Path dir;
  private final String bucket;
  private final String accessKey;
  private final String secretKey;
  private final int s3Port;
  private Process process;

  private SeaweedServer(Path dir, String bucket, String accessKey, String secretKey, int s3Port, Process process) {
    this.dir = dir;
    this.bucket = bucket;
    this.accessKey = accessKey;
    this.secretKey = secretKey;
    this.s3Port = s3Port;
    this.process = process;
  }

  /** Why no server can be started here (for an assumption), or null when {@code $XLAC_WEED} names a binary. */
  public static String unavailableReason() {
    String weed = System.getenv("XLAC_WEED");
    if (weed == null || weed.isBlank()) {
      return "XLAC_WEED is not set (scripts/test sets it to the pinned SeaweedFS binary)";
    }
    if (!Files.isExecutable(Path.of(weed))) {
      return "XLAC_WEED=" + weed + " is not an executable file";
    }
    return null;
  }

  /** Starts {@code weed mini} in {@code dir} with a bucket {@code bucket}, waiting until it takes a write. */
  /**
   * For a test class's {@code @BeforeAll}: a server started in {@code dir} with {@code bucket}, or the class skipped
   * with the reason there is none here ({@link #unavailableReason}).
   */
  public static SeaweedServer startOrSkip(Path dir, String bucket) throws IOException, InterruptedException {
    String why = unavailableReason();
    org.junit.jupiter.api.Assumptions.assumeTrue(why == null, why);
    return start(dir, bucket);
  }

  /** For {@code @AfterAll}: stops {@code server} when one started, and forgets the default credentials it set. */
  public static void stop(SeaweedServer server) throws InterruptedException {
    if (server != null) {
      server.close();
    }
    forgetCredentials();
  }

  public static SeaweedServer start(Path dir, String bucket) throws IOException, InterruptedException {
    return start(dir, bucket, "AK" + UUID.randomUUID().toString().replace("-", "").substring(0, 18).toUpperCase(),
        UUID.randomUUID().toString().replace("-", "") + UUID.randomUUID().toString().replace("-", ""));
  }

  /** As {@link #start(Path, String)}, with the identity's keys given (a second server for the same clients). */
  public static SeaweedServer start(Path dir, String bucket, String access, String secret)
      throws IOException, InterruptedException {
    IOException last = null;
    for (int attempt = 0; attempt < 3; attempt++) { // a free port taken by someone else between pick and bind
      try {
        return tryStart(dir.resolve("run-" + attempt), bucket, access, secret);
      } catch (IOException e) {
        last = e;
      }
    }
    throw last;
  }

  private static SeaweedServer tryStart(Path dir, String bucket, String access, String secret)
      throws IOException, InterruptedException {
    Files.createDirectories(dir.resolve("data"));
    Path config = dir.resolve("s3.json");
    Files.writeString(config, "{\"identities\":[{\"name\":\"xlac-test\",\"credentials\":[{\"accessKey\":\"" + access
        + "\",\"secretKey\":\"" + secret + "\"}],\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]},{\"name\":\"xlac-test-nolist\","
        + "\"credentials\":[{\"accessKey\":\"" + noList(access) + "\",\"secretKey\":\"" + secret + "\"}],"
        + "\"actions\":[\"Read\",\"Write\"]}]}");
    int[] p = freePorts(11);
    List<String> cmd = new ArrayList<>(List.of(System.getenv("XLAC_WEED"), "mini", "-dir=" + dir.resolve("data"),
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0",
        "-s3.port.lance=0", "-master.telemetry=false", "-bucket=" + bucket, "-s3.config=" + config,
        "-master.port=" + p[0], "-master.port.grpc=" + p[1], "-volume.port=" + p[2], "-volume.port.grpc=" + p[3],
        "-filer.port=" + p[4], "-filer.port.grpc=" + p[5], "-s3.port=" + p[6], "-s3.port.grpc=" + p[7],
        "-admin.port=" + p[8], "-admin.port.grpc=" + p[9], "-debug.port=" + p[10],
        "-filer.localSocket=" + dir.resolve("filer.sock"), "-s3.localSocket=" + dir.resolve("s3.sock")));
    Path log = dir.resolve("weed.log");
    Process process = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    SeaweedServer s = new SeaweedServer(dir, bucket, access, secret, p[6], process);
    long deadline = System.nanoTime() + START_LIMIT.toNanos();
    try (S3Client client = s.client()) {
      while (true) {
        if (!process.isAlive()) {
          throw new IOException("weed mini exited with " + process.exitValue() + ": " + tail(log));
        }
        if (listening(p[6])) {
          try { // the bucket exists and a volume takes data: the first write works
            client.putObject(PutObjectRequest.builder().bucket(bucket).key("probe/ready").build(),
                RequestBody.fromString("ready"));
            return s;
          } catch (RuntimeException e) {
            // not yet
          }
        }
        if (System.nanoTime() > deadline) {
          throw new IOException("weed mini did not take a write within " + START_LIMIT.toSeconds() + " s: " + tail(log));
        }
        Thread.sleep(250);
      }
    } catch (IOException | InterruptedException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  private static boolean listening(int port) {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/").toURL().openConnection();
      c.setConnectTimeout(500);
      c.setReadTimeout(2000);
      c.getResponseCode();
      c.disconnect();
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static int[] freePorts(int n) throws IOException {
    int[] ports = new int[n];
    List<ServerSocket> held = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0);
        held.add(s);
        ports[i] = s.getLocalPort();
      }
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
    return ports;
  }

  private static String tail(Path log) {
    try {
      String text = Files.readString(log, StandardCharsets.UTF_8);
      return text.substring(Math.max(0, text.length() - 2000));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  public String endpoint() {
    return "http://127.0.0.1:" + s3Port;
  }

  public String bucket() {
    return bucket;
  }

  public String accessKey() {
    return accessKey;
  }

  public String secretKey() {
    return secretKey;
  }

  /**
   * A second identity's access key (its secret is {@link #secretKey}): it may read and write objects but not list
   * them, so a test can show that some code lists nothing.
   */
  public String noListAccessKey() {
    return noList(accessKey);
  }

  private static String noList(String access) {
    return "NL" + access.substring(2);
  }

  public Path directory() {
    return dir;
  }

  /** The environment a child xlac needs to reach this server (credentials and region). */
  public Map<String, String> environment() {
    return Map.of("AWS_ACCESS_KEY_ID", accessKey, "AWS_SECRET_ACCESS_KEY", secretKey, "AWS_REGION", "us-east-1",
        "AWS_EC2_METADATA_DISABLED", "true");
  }

  /**
   * Makes this server's keys (and us-east-1) the AWS default chain's in this JVM, through the system properties the
   * chain reads, for tests whose code builds its own client; {@link #forgetCredentials} undoes it.
   */
  public void useAsDefaultCredentials() {
    System.setProperty("aws.accessKeyId", accessKey);
    System.setProperty("aws.secretAccessKey", secretKey);
    System.setProperty("aws.region", "us-east-1");
  }

  public static void forgetCredentials() {
    System.clearProperty("aws.accessKeyId");
    System.clearProperty("aws.secretAccessKey");
  }

  /** A plain S3 client with this server's keys, for a test to look at or damage objects directly. */
  public S3Client client() {
    return S3Client.builder().httpClientBuilder(UrlConnectionHttpClient.builder())
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
        .region(Region.US_EAST_1).endpointOverride(URI.create(endpoint())).forcePathStyle(true)
        .requestChecksumCalculation(software.amazon.awssdk.core.checksums.RequestChecksumCalculation.WHEN_REQUIRED)
        .build();
  }

  /** Whether the server process runs. */
  public boolean running() {
    return process != null && process.isAlive();
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s); safe twice. */
  @Override
  public void close() throws InterruptedException {
    Process p = process;
    if (p == null) {
      return;
    }
    p.destroy();
    if (!p.waitFor(10, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    process = null;
  }
}
