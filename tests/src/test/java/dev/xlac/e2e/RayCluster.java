package dev.xlac.e2e;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * ({@code setsid}), so {@link #close} stops exactly the process groups of this cluster (never {@code ray stop},
 * which stops every Ray of the user).
 */
public final class RayCluster implements AutoCloseable {
  private final Path dir;
  private final int dashboardPort;
  private final Set<Long> groups = new HashSet<>();

  private RayCluster(Path dir, int dashboardPort) {
    this.dir = dir;
    this.dashboardPort = dashboardPort;
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
    RayCluster c = new RayCluster(dir, freePort());
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

  /** The processes of this cluster: those in its groups, and any other that names its temp directory. */
  private List<ProcessHandle> processes() {
    Map<Long, ProcessHandle> found = new HashMap<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(d -> d.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          long pgid = Long.parseLong(f[2]);
          String cmdline = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8);
          if (groups.contains(pgid) || cmdline.contains(dir.toString())) {
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

  /** Stops this cluster's processes (SIGTERM, then SIGKILL after 3 s) and removes its directory. */
  @Override
  public void close() throws Exception {
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
