package dev.xlac.pipeline.ray;

import dev.xlac.core.XlacException;
import dev.xlac.pipeline.shard.ShardSettings;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How {@code parallel-compile --executor ray} distributes a run ({@link RayExecutor}).
 *
 * @param address the cluster dashboard's URL (its Jobs API), e.g. {@code http://head:8265}
 * @param headers sent with every request (a site's auth, {@code $RAY_JOB_HEADERS})
 * @param resources what each shard's job reserves on its node: {@code CPU}, {@code GPU}, {@code memory} (bytes) and
 *     custom resources, as Ray names them
 * @param shards what every sharding engine shares (shards, retries, shared directory, poll, progress)
 * @param taskCommand what a job runs, before {@code --run-dir RUN --shard I --attempt ID} (the launcher,
 *     {@code compile-shard} and the compile options to pass on)
 */
public record RaySettings(URI address, Map<String, String> headers, Map<String, Double> resources,
    ShardSettings shards, List<String> taskCommand) {
  /** A shard's job reserves one CPU unless told otherwise: Ray spreads the jobs over the nodes that have one free. */
  public static final Map<String, Double> DEFAULT_RESOURCES = Map.of("CPU", 1.0);

  public RaySettings {
    headers = Map.copyOf(headers);
    resources = Map.copyOf(resources);
    taskCommand = List.copyOf(taskCommand);
  }

  /**
   * The dashboard's URL as Ray users give it: {@code given} ({@code --ray-address}), else
   * {@code $RAY_API_SERVER_ADDRESS}, else {@code $RAY_ADDRESS} (as {@code ray job submit} reads them); a
   * {@code host:port} without a scheme is http. Bad input (one line) when there is none, or it is a {@code ray://}
   * client address or {@code auto}, which the Jobs API does not take.
   */
  public static URI address(String given, Map<String, String> env) {
    String from = "--ray-address";
    String a = given;
    for (String name : new String[] {"RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"}) {
      if (a == null || a.isBlank()) {
        a = env.get(name);
        from = "$" + name;
      }
    }
    if (a == null || a.isBlank()) {
      throw XlacException.badInput("--executor ray needs the address of the cluster's dashboard: --ray-address"
          + " http://HEAD:8265 or $RAY_ADDRESS");
    }
    a = a.strip();
    if (a.equals("auto") || a.startsWith("ray://")) {
      throw XlacException.badInput(from + " " + a + ": xlac submits through Ray's Jobs API, which needs the"
          + " dashboard's address (http://HEAD:8265), not a Ray client or cluster address");
    }
    if (!a.contains("://")) {
      a = "http://" + a;
    }
    URI uri;
    try {
      uri = new URI(a.endsWith("/") ? a : a + "/");
    } catch (URISyntaxException e) {
      throw XlacException.badInput(from + " " + a + ": not a URL (" + e.getReason() + ")");
    }
    if (!(uri.getScheme().equals("http") || uri.getScheme().equals("https")) || uri.getHost() == null) {
      throw XlacException.badInput(from + " " + a + ": not the dashboard's http(s)://HOST:PORT");
    }
    if (uri.getPort() == 6379 || uri.getPort() == 10001) {
      throw XlacException.badInput(from + " " + a + ": port " + uri.getPort() + " is Ray's " + (uri.getPort() == 6379
          ? "cluster (GCS)" : "client") + " port; the Jobs API is on the dashboard's (default 8265)");
    }
    return uri;
  }

  /**
   * {@code $RAY_JOB_HEADERS}: a JSON object of header names to values; none when absent. It holds credentials (a
   * token), so what is wrong with it is said without quoting any of it: jackson's reasons quote the text they met.
   */
  public static Map<String, String> headers(String json) {
    if (json == null || json.isBlank()) {
      return Map.of();
    }
    String expected = "$RAY_JOB_HEADERS must be a JSON object of header names to strings, e.g. {\"Authorization\":"
        + " \"Bearer TOKEN\"}: ";
    Object parsed;
    try {
      parsed = RayJson.parse(json);
    } catch (IllegalArgumentException e) {
      throw XlacException.badInput(expected + "it is not valid JSON" + offset(e.getMessage()));
    }
    if (!(parsed instanceof Map<?, ?> object)) {
      throw XlacException.badInput(expected + "it is not a JSON object");
    }
    Map<String, String> out = new LinkedHashMap<>();
    object.forEach((name, value) -> {
      if (!(value instanceof String s)) {
        throw XlacException.badInput(expected + "the value of " + name + " is not a string");
      }
      out.put((String) name, s);
    });
    return out;
  }

  /** " (at character N)" from RayJson's reason, which ends with the offset; else nothing. */
  private static String offset(String reason) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(" at offset (\\d+)$").matcher(reason);
    return m.find() ? " (at character " + (Long.parseLong(m.group(1)) + 1) + ")" : "";
  }

  /** {@code --ray-resources}: a JSON object of resource names to amounts, e.g. {"CPU": 4, "neuron_cores": 2}. */
  public static Map<String, Double> resources(String json) {
    if (json == null) {
      return DEFAULT_RESOURCES;
    }
    Map<String, Double> out = new LinkedHashMap<>();
    try {
      RayJson.object(json).forEach((name, value) -> {
        if (!(value instanceof Number n) || n.doubleValue() < 0 || !Double.isFinite(n.doubleValue())) {
          throw new IllegalArgumentException("the amount of " + name + " is not a number of at least 0");
        }
        out.put(name, n.doubleValue());
      });
    } catch (IllegalArgumentException e) {
      throw XlacException.badInput("--ray-resources " + json.strip().replaceAll("\\s+", " ") + ": not a JSON object"
          + " of Ray resources to amounts, e.g. {\"CPU\": 4}: " + e.getMessage());
    }
    return out;
  }
}
