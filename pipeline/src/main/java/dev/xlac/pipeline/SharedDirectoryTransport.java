package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.ExportRequest;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.hlo.GraphFingerprint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A {@link ShardTransport} through one run directory on a file system that the submitting host and every compute
 * node see (the usual Slurm site has one: home or a parallel file system). Layout of {@code RUN}:
 * <pre>
 *   inputs/shard-I/graphs.tsv          one line per graph, plan order: fingerprint TAB module name
 *   inputs/shard-I/HEX.hlo_module.pb   its serialized HloModuleProto (HEX: the fingerprint's digits)
 *   results/shard-I.bundle             the task's node-local cache as an xlac bundle
 *   results/shard-I.tsv                one line per graph; written last, so its presence means done
 *   logs/JOB_TASK.out                  the tasks' output (sbatch --output)
 * </pre>
 * Every file is written to a temporary name and renamed, so a reader never sees half of one. After a shard's
 * results were imported its inputs and bundle are removed; the result lines and the logs stay (small) for a
 * look at what each node did.
 */
public final class SharedDirectoryTransport implements ShardTransport {
  private final Path run;

  public SharedDirectoryTransport(Path run) {
    this.run = run.toAbsolutePath();
  }

  public Path runDirectory() {
    return run;
  }

  private Path inputs(int shard) {
    return run.resolve("inputs").resolve("shard-" + shard);
  }

  private Path bundle(int shard) {
    return run.resolve("results").resolve("shard-" + shard + ".bundle");
  }

  private Path lines(int shard) {
    return run.resolve("results").resolve("shard-" + shard + ".tsv");
  }

  @Override
  public void sendInputs(ShardPlan plan, CacheStore store) throws IOException {
    Files.createDirectories(run.resolve("logs"));
    for (ShardPlan.Shard s : plan.nonEmpty()) {
      Path dir = Files.createDirectories(inputs(s.index()));
      StringBuilder manifest = new StringBuilder();
      for (ShardPlan.Item item : s.items()) {
        byte[] bytes = store.readGraph(item.fingerprint()).orElseThrow(() -> new IOException(item.fingerprint()
            .describe(item.moduleName()) + " is missing or damaged in the cache; run 'xlac cache verify'"));
        AtomicFiles.writeBytes(dir.resolve(fileName(item.fingerprint())), bytes);
        manifest.append(item.fingerprint().value()).append('\t').append(oneField(item.moduleName())).append('\n');
      }
      AtomicFiles.writeString(dir.resolve("graphs.tsv"), manifest.toString());
    }
  }

  private static String fileName(GraphFingerprint fp) {
    return fp.value().substring(fp.value().indexOf(':') + 1) + ".hlo_module.pb";
  }

  static String oneField(String s) {
    return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
  }

  @Override
  public List<Input> receiveInputs(int shard) throws IOException {
    Path dir = inputs(shard);
    List<Input> out = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("graphs.tsv"), StandardCharsets.UTF_8)) {
      if (line.isEmpty()) {
        continue;
      }
      int tab = line.indexOf('\t');
      GraphFingerprint fp = GraphFingerprint.parse(line.substring(0, tab));
      out.add(new Input(fp, line.substring(tab + 1), dir.resolve(fileName(fp))));
    }
    return out;
  }

  @Override
  public void sendResults(int shard, CacheStore node, Path bundle, List<String> resultLines) throws IOException {
    node.exportBundle(bundle, ExportRequest.all());
    Files.createDirectories(run.resolve("results"));
    AtomicFiles.write(bundle(shard), out -> {
      Files.copy(bundle, out);
      return true;
    });
    AtomicFiles.writeString(lines(shard), String.join("\n", resultLines) + "\n");
  }

  @Override
  public Optional<Results> receiveResults(int shard) throws IOException {
    try {
      List<String> text = Files.readAllLines(lines(shard), StandardCharsets.UTF_8).stream()
          .filter(l -> !l.isEmpty()).toList();
      return Files.isRegularFile(bundle(shard)) ? Optional.of(new Results(bundle(shard), text)) : Optional.empty();
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
  }

  /** The bundle, whole: the cache's importer checks every piece (a damaged one is an XlacException). */
  @Override
  public void importResults(CacheStore store, Results back, List<GraphResult> lines, CompilerIdentity identity) {
    store.importBundle(back.bundle());
  }

  /** Removes the results, so that the next attempt's are the ones read (they replace these anyway). */
  @Override
  public void discard(int shard, Results back) {
    try {
      Files.deleteIfExists(lines(shard));
      Files.deleteIfExists(bundle(shard));
    } catch (IOException e) {
      // the next attempt overwrites both
    }
  }

  @Override
  public void done(int shard) {
    try {
      Files.deleteIfExists(bundle(shard));
      Path dir = inputs(shard);
      if (Files.isDirectory(dir)) {
        try (var files = Files.list(dir)) {
          for (Path f : files.toList()) {
            Files.deleteIfExists(f);
          }
        }
        Files.deleteIfExists(dir);
      }
    } catch (IOException e) {
      // Only space is lost; the next run uses a new directory.
    }
  }

  @Override
  public String describe() {
    return run.toString();
  }
}
