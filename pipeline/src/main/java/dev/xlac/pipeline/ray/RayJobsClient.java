package dev.xlac.pipeline.ray;

import dev.xlac.core.ExitCode;
import dev.xlac.core.Json;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Ray's Jobs API, the REST endpoint of a cluster's dashboard ({@code ray job submit} semantics): submit
 * ({@code POST /api/jobs/}), status ({@code GET /api/jobs/ID}), list ({@code GET /api/jobs/}), stop
 * ({@code POST /api/jobs/ID/stop}) and logs ({@code GET /api/jobs/ID/logs}), each under the dashboard's address,
 * path included (a dashboard behind an ingress: {@code https://gw/ray/api/jobs/}). The JDK's {@link HttpClient} (no
 * dependency beyond the platform), every call bounded in time; the headers (a site's auth) go with every request.
 * Its owner closes it: the client's selector thread lives until then.
 */
final class RayJobsClient implements AutoCloseable {
  private static final Duration CONNECT = Duration.ofSeconds(10);
  private static final Duration CALL = Duration.ofSeconds(60);

  /** A job as the API shows it: its submission id, status (PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED), ... */
  record Job(String submissionId, String status, String message, Long driverExitCode, Map<String, String> metadata) {
    boolean ended() {
      return status.equals("STOPPED") || status.equals("SUCCEEDED") || status.equals("FAILED");
    }
  }

  private final URI address;
  private final Map<String, String> headers;
  private final HttpClient http;
  private final Duration timeout;

  RayJobsClient(URI address, Map<String, String> headers) {
    this(address, headers, CALL);
  }

  RayJobsClient(URI address, Map<String, String> headers, Duration timeout) {
    // the API's paths are resolved against the address: without its last '/', its last segment would be dropped
    this.address = address.getPath().endsWith("/") ? address : URI.create(address + "/");
    this.headers = Map.copyOf(headers);
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().connectTimeout(CONNECT).followRedirects(HttpClient.Redirect.NORMAL).build();
  }

  URI address() {
    return address;
  }

  /** Waits for the calls under way (each bounded in time), then ends the client's threads. Safe twice. */
  @Override
  public void close() {
    http.close();
  }

  /** The cluster's Ray version; exit 3 with one line when the dashboard does not answer as Ray's. */
  String version() throws InterruptedException {
    Map<String, Object> v = object(call("GET", "api/version", null, 200), "GET /api/version");
    Object ray = v.get("ray_version");
    if (!(ray instanceof String s)) {
      throw environment("the answer of " + address.resolve("api/version") + " names no ray_version: is this Ray's"
          + " dashboard?");
    }
    return s;
  }

  /**
   * Submits a job that runs {@code entrypoint} (a shell command line) under {@code submissionId}, tagged with
   * {@code metadata}; {@code resources}: {@code CPU}, {@code GPU}, {@code memory} and custom resources the
   * entrypoint reserves on its node; {@code env} its environment variables (runtime_env env_vars).
   */
  void submit(String submissionId, String entrypoint, Map<String, String> metadata, Map<String, Double> resources,
      Map<String, String> env) throws InterruptedException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("entrypoint", entrypoint);
    body.put("submission_id", submissionId);
    body.put("metadata", metadata);
    Map<String, Object> custom = new LinkedHashMap<>();
    resources.forEach((name, amount) -> {
      switch (name) {
        case "CPU" -> body.put("entrypoint_num_cpus", amount);
        case "GPU" -> body.put("entrypoint_num_gpus", amount);
        case "memory" -> body.put("entrypoint_memory", amount.longValue());
        default -> custom.put(name, amount);
      }
    });
    if (!custom.isEmpty()) {
      body.put("entrypoint_resources", custom);
    }
    if (!env.isEmpty()) {
      body.put("runtime_env", Map.of("env_vars", env));
    }
    Map<String, Object> answer = object(call("POST", "api/jobs/", Json.write(body), 200), "POST /api/jobs/");
    if (!submissionId.equals(answer.get("submission_id"))) {
      throw environment("Ray accepted job " + submissionId + " under another id: " + answer.get("submission_id"));
    }
  }

  /** The job {@code id}; empty when Ray does not know it. */
  Optional<Job> job(String id) throws InterruptedException {
    HttpResponse<String> r = call("GET", "api/jobs/" + path(id), null, 200, 404);
    return r.statusCode() == 404 ? Optional.empty() : Optional.of(job(object(r, "GET /api/jobs/" + id)));
  }

  /** Every job the cluster keeps. */
  List<Job> jobs() throws InterruptedException {
    HttpResponse<String> r = call("GET", "api/jobs/", null, 200);
    Object list;
    try {
      list = RayJson.parse(r.body());
    } catch (IllegalArgumentException e) {
      throw environment("Ray's answer to GET /api/jobs/ is not JSON: " + e.getMessage());
    }
    if (!(list instanceof List<?> l)) {
      throw environment("Ray's answer to GET /api/jobs/ is not a list of jobs");
    }
    List<Job> out = new ArrayList<>();
    for (Object o : l) {
      if (o instanceof Map<?, ?> m) {
        @SuppressWarnings("unchecked")
        Map<String, Object> job = (Map<String, Object>) m;
        if (job.get("submission_id") instanceof String) { // drivers started by hand have none
          out.add(job(job));
        }
      }
    }
    return out;
  }

  /** Stops job {@code id}; whether it was still running. A job Ray does not know is not running. */
  boolean stop(String id) throws InterruptedException {
    HttpResponse<String> r = call("POST", "api/jobs/" + path(id) + "/stop", "", 200, 404);
    return r.statusCode() == 200 && Boolean.TRUE.equals(object(r, "POST /api/jobs/" + id + "/stop").get("stopped"));
  }

  /** The logs of job {@code id} so far; empty when Ray does not know it. */
  Optional<String> logs(String id) throws InterruptedException {
    HttpResponse<String> r = call("GET", "api/jobs/" + path(id) + "/logs", null, 200, 404);
    if (r.statusCode() == 404) {
      return Optional.empty();
    }
    return Optional.ofNullable(object(r, "GET /api/jobs/" + id + "/logs").get("logs") instanceof String s ? s : null);
  }

  private static String path(String id) {
    return URLEncoder.encode(id, StandardCharsets.UTF_8);
  }

  private static Job job(Map<String, Object> m) {
    Map<String, String> metadata = new LinkedHashMap<>();
    if (m.get("metadata") instanceof Map<?, ?> md) {
      md.forEach((k, v) -> {
        if (k instanceof String key && v instanceof String value) {
          metadata.put(key, value);
        }
      });
    }
    return new Job(String.valueOf(m.get("submission_id")), String.valueOf(m.get("status")),
        m.get("message") instanceof String s ? s : "",
        m.get("driver_exit_code") instanceof Number n ? Long.valueOf(n.longValue()) : null,
        metadata);
  }

  private Map<String, Object> object(HttpResponse<String> r, String what) {
    try {
      return RayJson.object(r.body());
    } catch (IllegalArgumentException e) {
      throw environment("Ray's answer to " + what + " is not a JSON object: " + e.getMessage());
    }
  }

  /** {@code path}: relative ("api/jobs/"), so that it goes under the address's own path. */
  private HttpResponse<String> call(String method, String path, String json, int... ok) throws InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(address.resolve(path)).timeout(timeout);
    headers.forEach(b::header);
    if (json != null) {
      b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(json));
    } else {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    }
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (java.net.http.HttpTimeoutException e) {
      throw environment("Ray's dashboard at " + address + " did not answer " + method + " /" + path + " within "
          + timeout.toSeconds() + " s");
    } catch (IOException e) {
      // The JDK's refusal carries no message of its own (its cause says "the file was closed").
      String why = e instanceof java.net.ConnectException ? "nothing answers there" : XlacException.reason(e);
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot reach Ray's dashboard at " + address + ": " + why
          + " (is the cluster up? --ray-address or RAY_ADDRESS names its dashboard, http://HEAD:8265)", e);
    }
    for (int code : ok) {
      if (r.statusCode() == code) {
        return r;
      }
    }
    throw environment("Ray refused " + method + " /" + path + " (HTTP " + r.statusCode() + "): "
        + lastLine(r.body()));
  }

  /** Ray answers a failure with its Python traceback: the last line says what went wrong. */
  static String lastLine(String body) {
    List<String> lines = body.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.equals(".")).toList();
    return lines.isEmpty() ? "no message" : lines.getLast();
  }

  private static XlacException environment(String message) {
    return new XlacException(ExitCode.ENVIRONMENT, message);
  }
}
