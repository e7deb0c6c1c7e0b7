package dev.xlac.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;

/** What the end-to-end tests of the sharding engines (Slurm, Ray) look at alike: the sample, its tasks, their results. */
final class ShardedRuns {
  private ShardedRuns() {}

  static String xlac() {
    return Launcher.root().resolve("xlac").toString();
  }

  /** The JAX MLP sample, two steps. */
  static List<String> mlp() {
    return List.of(Launcher.python(), Launcher.root().resolve("samples/jax/mlp.py").toString(), "--steps", "2");
  }

  /** The pid of a running {@code xlac compile-shard} task of a run in {@code shared}, as /proc shows it. */
  static Optional<Long> shardTask(Path shared) {
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(d -> d.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String cmdline = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8);
          if (cmdline.contains("compile-shard") && cmdline.contains(shared.toString()) && cmdline.contains("java")) {
            return Optional.of(Long.parseLong(p.getFileName().toString()));
          }
        } catch (IOException gone) {
          // the process ended while we looked
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Optional.empty();
  }

  /** Compiles per fingerprint, over every result manifest the tasks wrote under {@code prefix} in {@code bucket}. */
  static Map<String, Integer> compilesPerGraph(S3Client s3, String bucket, String prefix) {
    Map<String, Integer> count = new HashMap<>();
    for (String key : objects(s3, bucket, prefix + "/v1/runs/")) {
      if (key.endsWith(".tsv")) {
        String text = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(key).build()).asUtf8String();
        for (String line : text.lines().toList()) {
          String[] fields = line.split("\t");
          if (fields.length > 1 && fields[1].equals("COMPILED")) {
            count.merge(fields[0], 1, Integer::sum);
          }
        }
      }
    }
    return count;
  }

  static List<String> objects(S3Client s3, String bucket, String prefix) {
    List<String> keys = new ArrayList<>();
    for (var page : s3.listObjectsV2Paginator(ListObjectsV2Request.builder().bucket(bucket).prefix(prefix).build())) {
      page.contents().forEach(o -> keys.add(o.key()));
    }
    return keys;
  }

  /** Whatever a test started and left running (it failed half-way): killed with its children, and waited for. */
  static void killWithChildren(List<Process> started) {
    for (Process p : started) {
      List<ProcessHandle> tree = new ArrayList<>(p.descendants().toList());
      tree.add(p.toHandle());
      tree.forEach(ProcessHandle::destroyForcibly);
      for (ProcessHandle h : tree) {
        h.onExit().completeOnTimeout(null, 30, TimeUnit.SECONDS).join();
      }
    }
    started.clear();
  }
}
