package dev.xlac.pipeline.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.e2e.RayCluster;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link RayJobsClient} against a real dashboard (a one-node {@link RayCluster} from the pinned Ray): each call's
 * fields are the ones Ray reads and answers with, and its refusals are one line, exit 3.
 */
class RayJobsClientTest {
  private static RayCluster ray;
  private static RayJobsClient client;

  @BeforeAll
  static void startHead() throws Exception {
    String why = RayCluster.unavailableReason();
    Assumptions.assumeTrue(why == null, why);
    ray = RayCluster.start(1, 0, Map.of());
    client = new RayJobsClient(RaySettings.address(ray.address(), Map.of()), Map.of("X-Xlac-Test", "1"));
  }

  @AfterAll
  static void stopHead() throws Exception {
    if (client != null) {
      client.close();
    }
    if (ray != null) {
      ray.close();
    }
  }

  private static RayJobsClient.Job waitFor(String id, String status) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    RayJobsClient.Job j = client.job(id).orElseThrow();
    while (!j.status().equals(status) && System.nanoTime() < deadline) {
      Thread.sleep(200);
      j = client.job(id).orElseThrow();
    }
    return j;
  }

  @Test
  void version_namesTheClustersRay() throws Exception {
    assertThat(client.version()).isEqualTo("2.60.0");
  }

  @Test
  void submittedJob_runsItsEntrypointWithItsEnvironment_andReportsExitCodeLogsAndMetadata() throws Exception {
    client.submit("xlac_t_ok", "echo \"hello $XLAC_T\"; exit 3", Map.of("xlac_run", "t1"), Map.of("CPU", 0.5),
        Map.of("XLAC_T", "from runtime_env"));
    RayJobsClient.Job j = waitFor("xlac_t_ok", "FAILED");
    assertThat(j.status()).isEqualTo("FAILED");
    assertThat(j.driverExitCode()).isEqualTo(3L);
    assertThat(j.ended()).isTrue();
    assertThat(j.metadata()).containsEntry("xlac_run", "t1");
    assertThat(client.logs("xlac_t_ok").orElseThrow()).contains("hello from runtime_env");
    assertThat(client.jobs()).anySatisfy(l -> assertThat(l.submissionId()).isEqualTo("xlac_t_ok"));
    assertThat(client.stop("xlac_t_ok")).as("an ended job is not stopped again").isFalse();
  }

  /** Ray takes a stop of a job still waiting for its resources, but shows it as pending until it would start. */
  @Test
  void jobWaitingForAResourceNoNodeHas_isPending_andItsStopIsTaken() throws Exception {
    client.submit("xlac_t_pending", "true", Map.of(), Map.of("xlac_nowhere", 1.0), Map.of());
    RayJobsClient.Job j = client.job("xlac_t_pending").orElseThrow();
    assertThat(j.status()).isEqualTo("PENDING");
    assertThat(j.ended()).isFalse();
    assertThat(client.stop("xlac_t_pending")).isTrue();
  }

  @Test
  void runningJob_isStopped() throws Exception {
    client.submit("xlac_t_running", "sleep 600", Map.of(), Map.of("CPU", 0.5), Map.of());
    assertThat(waitFor("xlac_t_running", "RUNNING").status()).isEqualTo("RUNNING");
    assertThat(client.stop("xlac_t_running")).isTrue();
    assertThat(waitFor("xlac_t_running", "STOPPED").status()).isEqualTo("STOPPED");
  }

  @Test
  void unknownJob_isEmpty_andNotStopped() throws Exception {
    assertThat(client.job("xlac_t_nosuch")).isEmpty();
    assertThat(client.logs("xlac_t_nosuch")).isEmpty();
    assertThat(client.stop("xlac_t_nosuch")).isFalse();
  }

  @Test
  void aSecondJobUnderTheSameId_isRefused_withRaysReasonOnOneLine() throws Exception {
    client.submit("xlac_t_twice", "true", Map.of(), Map.of(), Map.of());
    assertThatThrownBy(() -> client.submit("xlac_t_twice", "true", Map.of(), Map.of(), Map.of()))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).startsWith("Ray refused POST /api/jobs/ (HTTP ")
              .contains("xlac_t_twice already exists").doesNotContain("\n");
        });
  }

  @Test
  void noDashboard_isExit3_namingTheAddress() {
    RayJobsClient none = new RayJobsClient(URI.create("http://127.0.0.1:9/"), Map.of(), Duration.ofSeconds(5));
    assertThatThrownBy(none::version).isInstanceOfSatisfying(XlacException.class, e -> {
      assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
      assertThat(e.getMessage()).isEqualTo("cannot reach Ray's dashboard at http://127.0.0.1:9/: nothing answers"
          + " there (is the cluster up? --ray-address or RAY_ADDRESS names its dashboard, http://HEAD:8265)");
    });
  }

  /**
   * A dashboard behind an ingress under a path (KubeRay's https://GATEWAY/ray/): the API was called at the root
   * ({@code resolve("/api/...")} drops the path), which the ingress does not route. Each call now goes under the
   * path, with the headers of $RAY_JOB_HEADERS, as the proxy saw them on the wire.
   */
  @Test
  void aDashboardUnderAPath_isCalledUnderIt_withRaysJobHeadersOnEveryRequest() throws Exception {
    try (DashboardProxy proxy = DashboardProxy.start(ray.address(), "/ray/");
        RayJobsClient behind = new RayJobsClient(RaySettings.address(proxy.address(), Map.of()),
            RaySettings.headers("{\"Authorization\": \"Bearer xlac-test-token\", \"X-Site\": \"kuberay\"}"))) {
      assertThat(behind.version()).isEqualTo("2.60.0");
      behind.submit("xlac_t_path", "true", Map.of(), Map.of(), Map.of());
      assertThat(waitFor("xlac_t_path", "SUCCEEDED").status()).isEqualTo("SUCCEEDED");
      assertThat(behind.job("xlac_t_path")).hasValueSatisfying(j -> assertThat(j.status()).isEqualTo("SUCCEEDED"));
      assertThat(behind.jobs()).anySatisfy(j -> assertThat(j.submissionId()).isEqualTo("xlac_t_path"));
      assertThat(behind.logs("xlac_t_path")).isPresent();
      assertThat(behind.stop("xlac_t_path")).isFalse();
      List<DashboardProxy.Seen> seen = proxy.seen();
      assertThat(seen).extracting(DashboardProxy.Seen::path).containsExactly("/ray/api/version", "/ray/api/jobs/",
          "/ray/api/jobs/xlac_t_path", "/ray/api/jobs/", "/ray/api/jobs/xlac_t_path/logs",
          "/ray/api/jobs/xlac_t_path/stop");
      assertThat(seen).allSatisfy(s -> {
        assertThat(s.headers().get("Authorization")).containsExactly("Bearer xlac-test-token");
        assertThat(s.headers().get("X-site")).containsExactly("kuberay");
      });
    }
  }

  /** Messages name the API's URL under the address's path once, without a doubled '/'. */
  @Test
  void anAnswerThatIsNotRays_namesTheUrlUnderThePath() throws Exception {
    HttpServer notRay = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    notRay.createContext("/", exchange -> {
      try (exchange) {
        exchange.sendResponseHeaders(200, 2);
        exchange.getResponseBody().write("{}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
    });
    notRay.start();
    String at = "http://127.0.0.1:" + notRay.getAddress().getPort();
    try (RayJobsClient c = new RayJobsClient(RaySettings.address(at + "/gw", Map.of()), Map.of())) {
      assertThatThrownBy(c::version).hasMessage("the answer of " + at + "/gw/api/version names no ray_version: is"
          + " this Ray's dashboard?");
    } finally {
      notRay.stop(0);
    }
  }

  @Test
  void lastLine_ofRaysTraceback_isItsReason() {
    assertThat(RayJobsClient.lastLine("Traceback (most recent call last):\n  File x\nValueError: bad.\n.\n"))
        .isEqualTo("ValueError: bad.");
    assertThat(RayJobsClient.lastLine("")).isEqualTo("no message");
  }
}
