package dev.xlac.cli.compile;

import dev.xlac.core.XlacException;
import dev.xlac.pipeline.ray.RaySettings;
import dev.xlac.pipeline.shard.ShardSettings;
import java.util.List;
import picocli.CommandLine.Option;

/** {@code parallel-compile --executor ray}'s own options (the shared ones are in {@link SlurmOptions}). */
final class RayOptions {
  @Option(names = "--ray-address", paramLabel = "URL", description = "ray: the URL of the cluster's dashboard, whose"
      + " port is 8265 unless the cluster says otherwise (default: $RAY_API_SERVER_ADDRESS, else $RAY_ADDRESS); request"
      + " headers such as auth from $RAY_JOB_HEADERS (a JSON object), as for 'ray job submit'.")
  String address;

  @Option(names = "--ray-resources", paramLabel = "JSON", description = "ray: what each shard's job reserves on its"
      + " node, as a JSON object of Ray resources, e.g. '{\"CPU\": 8, \"memory\": 17179869184}' (default:"
      + " {\"CPU\": 1}).")
  String resources;

  @Option(names = "--ray-stop-orphans", description = "ray: compile nothing; stop the jobs still pending or running"
      + " that a parallel-compile on this host submitted before it died (found by their metadata), one line each.")
  boolean stopOrphans;

  void requireNone() {
    if (address != null || resources != null || stopOrphans) {
      throw XlacException.badInput("--ray-address, --ray-resources and --ray-stop-orphans need --executor ray");
    }
  }

  RaySettings settings(ShardSettings shards, List<String> taskCommand) {
    return new RaySettings(RaySettings.address(address, System.getenv()),
        RaySettings.headers(System.getenv("RAY_JOB_HEADERS")), RaySettings.resources(resources), shards, taskCommand);
  }
}
