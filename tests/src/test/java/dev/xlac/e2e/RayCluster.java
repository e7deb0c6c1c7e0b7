package dev.xlac.e2e;

import com.fasterxml.jackson.jr.ob.JSON;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Ray cluster on 127.0.0.1 for tests: a head ({@code ray start --head}, with the dashboard and its Jobs API)
 * and optionally a second node ({@code ray start --address}), from the pinned Ray ({@code $XLAC_RAY}, set by
 * scripts/test), in a temp directory of its own, on free ports. Each {@code ray start} runs in a session of its own
 * ({@code setsid}), so {@link #close} stops exactly the processes of this cluster (never {@code ray stop}, which
 * stops every Ray of the user): first every job through the Jobs API, then the nodes' process groups, then what
 * is left of its jobs (an entrypoint may have started a session of its own, out of the groups' reach).
 */
public final class RayCluster implements AutoCloseable {
  private final Path dir;
  private final int dashboardPort;
  private final int gcsPort;
  private final Set<Long> groups = new HashSet<>();

  private RayCluster(Path dir, int dashboardPort, int gcsPort) {
    this.dir = dir;
    this.dashboardPort = dashboardPort;
    this.gcsPort = gcsPort;
  }

  /** Why no cluster can be started here (for an assumption), or null. */
  public static String unavailableReason() {
    String ray = System.getenv("XLAC_RAY");
    if (ray == null || ray.isBlank()) {
      return "XLAC_RAY is not set (scripts/test sets it to the pinned Ray's CLI, scripts/pyenv --ray)";
    }
    return Files.isExecutable(Path.of(ray)) ? null : "XLAC_RAY=" + ray + " is not an executable file";
  }

  /**
   * Starts a head with {@code cpus} CPUs and, when {@code workerCpus > 0}, a second node with that many; both with
   * {@code env} over this environment (what their jobs inherit: the S3 credentials a site gives its nodes).
   */
  public static RayCluster start(int cpus, int workerCpus, Map<String, String> env) throws Exception {
    Path dir = Files.createTempDirectory(Path.of("/tmp"), "xlac-ray"); // short: Ray's socket paths must fit
    int gcs = freePort();
    RayCluster c = new RayCluster(dir, freePort(), gcs);
    try {
      c.ray(env, "start", "--head", "--node-ip-address=127.0.0.1", "--port=" + gcs, "--dashboard-host=127.0.0.1",
          "--dashboard-port=" + c.dashboardPort, "--include-dashboard=true", "--temp-dir=" + dir.resolve("t"),
          "--num-cpus=" + cpus, "--disable-usage-stats", "--ray-client-server-port=" + freePort(),
          "--dashboard-agent-listen-port=" + freePort());
      if (workerCpus > 0) {
        c.ray(env, "start", "--address=127.0.0.1:" + gcs, "--node-ip-address=127.0.0.1",
            "--num-cpus=" + workerCpus, "--disable-usage-stats", "--dashboard-agent-listen-port=" + freePort());
      }
      return c;
    } catch (Exception | AssertionError e) {
      c.close();
      throw e;
    }
  }

  public String address() {
    return "http://127.0.0.1:" + dashboardPort;
  }

  private void ray(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("setsid", System.getenv("XLAC_RAY")));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(dir.resolve("start-" + groups.size() + ".log").toFile());
    pb.environment().putAll(env);
    pb.environment().put("RAY_USAGE_STATS_ENABLED", "0");
    Process p = pb.start();
    groups.add(p.pid()); // setsid made the child a group leader: the node's daemons are in its group
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("ray " + args[0] + " did not finish within 120 s: " + log());
    }
    if (p.exitValue() != 0) {
      throw new AssertionError("ray " + String.join(" ", args) + " failed (exit " + p.exitValue() + "): " + log());
    }
  }

  private String log() throws IOException {
    StringBuilder s = new StringBuilder();
    try (Stream<Path> logs = Files.list(dir)) {
      for (Path f : logs.filter(f -> f.getFileName().toString().startsWith("start-")).sorted().toList()) {
        s.append(Files.readString(f, StandardCharsets.UTF_8));
      }
    }
    return s.toString();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * The processes of this cluster: those in its groups, any other that names its temp directory, and those of its
   * jobs, wherever they went: Ray gives a job's entrypoint {@code RAY_ADDRESS=IP:GCS_PORT}, this cluster's own port
   * (children inherit it).
   */
  private List<ProcessHandle> processes() {
    Map<Long, ProcessHandle> found = new HashMap<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(d -> d.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          long pgid = Long.parseLong(f[2]);
          String cmdline = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8);
          if (groups.contains(pgid) || cmdline.contains(dir.toString()) || isJobOfThisCluster(p)) {
            long pid = Long.parseLong(p.getFileName().toString());
            ProcessHandle.of(pid).ifPresent(h -> found.put(pid, h));
          }
        } catch (IOException | RuntimeException gone) {
          // the process ended while we looked
        }
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    found.remove(ProcessHandle.current().pid());
    return List.copyOf(found.values());
  }

  private boolean isJobOfThisCluster(Path proc) throws IOException {
    String own = "RAY_ADDRESS=";
    for (String var : new String(Files.readAllBytes(proc.resolve("environ")), StandardCharsets.UTF_8).split("\0")) {
      if (var.startsWith(own) && var.endsWith(":" + gcsPort)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Stops every job of the cluster not yet ended through its Jobs API (as {@code ray job stop}) and waits up to 10 s
   * for those running to end (Ray goes on listing a stopped job that was pending as PENDING); a dashboard that does
   * not answer leaves them to {@link #close}'s kill.
   */
  private void stopJobs() {
    try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      Map<String, String> jobs = jobs(http);
      for (Map.Entry<String, String> job : jobs.entrySet()) {
        if (job.getValue().equals("PENDING") || job.getValue().equals("RUNNING")) {
          http.send(HttpRequest.newBuilder(URI.create(address() + "/api/jobs/" + job.getKey() + "/stop"))
              .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.noBody()).build(),
              HttpResponse.BodyHandlers.discarding());
        }
      }
      while (jobs.containsValue("RUNNING") && System.nanoTime() < deadline) {
        Thread.sleep(200);
        jobs = jobs(http);
      }
    } catch (IOException | RuntimeException e) {
      // the dashboard is gone: the kill below finds the jobs' processes by their environment
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Each job's status by its submission id. */
  private Map<String, String> jobs(HttpClient http) throws IOException, InterruptedException {
    String body = http.send(HttpRequest.newBuilder(URI.create(address() + "/api/jobs/"))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
    Map<String, String> jobs = new HashMap<>();
    for (Object o : (List<?>) JSON.std.anyFrom(body)) {
      if (o instanceof Map<?, ?> job && job.get("submission_id") instanceof String id) {
        jobs.put(id, String.valueOf(job.get("status")));
      }
    }
    return jobs;
  }

  /**
   * Stops this cluster's jobs, then its processes and those its jobs left (SIGTERM, then SIGKILL after 3 s), and
   * removes its directory.
   */
  @Override
  public void close() throws Exception {
    stopJobs();
    List<ProcessHandle> all = processes();
    all.forEach(ProcessHandle::destroy);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
    for (ProcessHandle h : all) {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        h.onExit().completeOnTimeout(null, left, TimeUnit.NANOSECONDS).join();
      }
    }
    processes().forEach(ProcessHandle::destroyForcibly);
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
