package dev.xlac.pipeline.shard;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.ImportRequest;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.io.FileTrees;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
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
 *   inputs/shard-I/requests.tsv        one line per recorded request to compile for the run's plugin: key TAB name
 *   inputs/shard-I/HEX.request         its sections (HEX: the key's digits): "xlac-shard-request 1\n", then format,
 *                                      program, options and plugin identity text, each as an 8-byte big-endian length
 *                                      and its bytes
 *   results/shard-I.A.bundle           attempt A's node-local cache as an xlac bundle (A: its Slurm job id)
 *   results/shard-I.A.tsv              one line per graph; written last, so its presence means done
 *   logs/JOB_TASK.out                  the tasks' output (sbatch --output)
 * </pre>
 * Every file is written to a temporary name and renamed, so a reader never sees half of one. After a shard's
 * results were imported its inputs and bundle are removed; the result lines and the logs stay (small) for a
 * look at what each node did.
 */
public final class SharedDirectoryTransport implements ShardTransport {
  private final Path run;
  private final BundleSigningKey signer;
  private final BundleKey trusted;

  /** Unsigned bundles, imported as the cache takes any bundle. */
  public SharedDirectoryTransport(Path run) {
    this(run, null, null);
  }

  /**
   * {@code signer} (a task's side: the run's key, {@link ShardTask#runKey}) signs the bundles sent; {@code trusted}
   * (the submitter's side: its public half) is the only key a bundle imported may be signed by. Either may be null.
   */
  public SharedDirectoryTransport(Path run, BundleSigningKey signer, BundleKey trusted) {
    this.run = run.toAbsolutePath();
    this.signer = signer;
    this.trusted = trusted;
  }

  public Path runDirectory() {
    return run;
  }

  private Path inputs(int shard) {
    return run.resolve("inputs").resolve("shard-" + shard);
  }

  private Path bundle(int shard, String attempt) {
    return run.resolve("results").resolve("shard-" + shard + "." + attemptName(attempt) + ".bundle");
  }

  private Path lines(int shard, String attempt) {
    return run.resolve("results").resolve("shard-" + shard + "." + attemptName(attempt) + ".tsv");
  }

  /** An attempt's name as part of a file name: letters, digits, '-' and '_' only. */
  private static String attemptName(String attempt) {
    if (!attempt.matches("[A-Za-z0-9_-]+")) {
      throw new IllegalArgumentException("not an attempt name (a Slurm job id): '" + oneField(attempt) + "'");
    }
    return attempt;
  }

  /** Every attempt's result files of {@code shard} with this suffix ({@code .bundle}, {@code .tsv}). */
  private List<Path> resultFiles(int shard, String suffix) throws IOException {
    Path dir = run.resolve("results");
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (var files = Files.list(dir)) {
      String prefix = "shard-" + shard + ".";
      return files.filter(f -> f.getFileName().toString().startsWith(prefix)
          && f.getFileName().toString().endsWith(suffix)).toList();
    }
  }

  @Override
  public void sendInputs(ShardPlan plan, CacheStore store, RequestSource requests) throws IOException {
    Files.createDirectories(run.resolve("logs"));
    for (ShardPlan.Shard s : plan.nonEmpty()) {
      Path dir = Files.createDirectories(inputs(s.index()));
      StringBuilder manifest = new StringBuilder();
      StringBuilder requestList = new StringBuilder();
      for (ShardPlan.Item item : s.items()) {
        if (item.fingerprint() instanceof RequestKey key) {
          writeRequest(dir.resolve(key.hex() + REQUEST_SUFFIX), requests.read(key));
          requestList.append(key.value()).append('\t').append(oneField(item.moduleName())).append('\n');
          continue;
        }
        GraphFingerprint fp = item.graph();
        byte[] bytes = store.readGraph(fp).orElseThrow(() -> new IOException(fp.describe(item.moduleName())
            + " is missing or damaged in the cache; run 'xlac cache verify'"));
        AtomicFiles.writeBytes(dir.resolve(fileName(fp)), bytes);
        manifest.append(fp.value()).append('\t').append(oneField(item.moduleName())).append('\n');
      }
      if (!requestList.isEmpty()) {
        AtomicFiles.writeString(dir.resolve("requests.tsv"), requestList.toString());
      }
      AtomicFiles.writeString(dir.resolve("graphs.tsv"), manifest.toString());
    }
  }

  private static final String REQUEST_SUFFIX = ".request";
  private static final byte[] REQUEST_MAGIC = "xlac-shard-request 1\n".getBytes(StandardCharsets.US_ASCII);

  private static void writeRequest(Path file, RequestInput r) throws IOException {
    AtomicFiles.write(file, out -> {
      java.io.DataOutputStream data = new java.io.DataOutputStream(out);
      data.write(REQUEST_MAGIC);
      for (byte[] section : new byte[][] {r.format().getBytes(StandardCharsets.UTF_8), r.program(), r.options(),
          r.identityText().getBytes(StandardCharsets.UTF_8)}) {
        data.writeLong(section.length);
        data.write(section);
      }
      data.flush();
      return true;
    });
  }

  /** The sections of a {@code HEX.request} file; a file that is not one is an IllegalArgumentException. */
  private static RequestInput readRequest(Path file, RequestKey key, String name) throws IOException {
    byte[] all = Files.readAllBytes(file);
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(all);
    if (all.length < REQUEST_MAGIC.length || !java.util.Arrays.equals(all, 0, REQUEST_MAGIC.length, REQUEST_MAGIC,
        0, REQUEST_MAGIC.length)) {
      throw new IllegalArgumentException(file + ": not a shard request file");
    }
    b.position(REQUEST_MAGIC.length);
    byte[][] sections = new byte[4][];
    for (int i = 0; i < 4; i++) {
      long n = b.remaining() >= 8 ? b.getLong() : -1;
      if (n < 0 || n > b.remaining()) {
        throw new IllegalArgumentException(file + ": truncated (section " + (i + 1) + " of 4)");
      }
      sections[i] = new byte[(int) n];
      b.get(sections[i]);
    }
    return new RequestInput(key, name, new String(sections[0], StandardCharsets.UTF_8), sections[1], sections[2],
        new String(sections[3], StandardCharsets.UTF_8));
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
    List<String> lines = Files.readAllLines(dir.resolve("graphs.tsv"), StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isEmpty()) {
        continue;
      }
      int tab = line.indexOf('\t');
      if (tab < 0) {
        throw new IllegalArgumentException(dir.resolve("graphs.tsv") + " line " + (i + 1) + ": no tab between"
            + " fingerprint and module name");
      }
      GraphFingerprint fp;
      try {
        fp = GraphFingerprint.parse(line.substring(0, tab));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(dir.resolve("graphs.tsv") + " line " + (i + 1) + ": " + e.getMessage(),
            e);
      }
      out.add(new Input(fp, line.substring(tab + 1), dir.resolve(fileName(fp))));
    }
    return out;
  }

  @Override
  public List<RequestInput> receiveRequests(int shard) throws IOException {
    Path list = inputs(shard).resolve("requests.tsv");
    if (!Files.isRegularFile(list)) {
      return List.of();
    }
    List<RequestInput> out = new ArrayList<>();
    List<String> lines = Files.readAllLines(list, StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isEmpty()) {
        continue;
      }
      int tab = line.indexOf('\t');
      RequestKey key;
      try {
        if (tab < 0) {
          throw new IllegalArgumentException("no tab between key and name");
        }
        key = RequestKey.parse(line.substring(0, tab));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(list + " line " + (i + 1) + ": " + e.getMessage(), e);
      }
      out.add(readRequest(inputs(shard).resolve(key.hex() + REQUEST_SUFFIX), key, line.substring(tab + 1)));
    }
    return out;
  }

  @Override
  public void sendResults(int shard, String attempt, CacheStore node, Path bundle, List<String> resultLines)
      throws IOException {
    node.exportBundle(bundle, signer == null ? ExportRequest.all() : ExportRequest.all().signedBy(signer));
    Files.createDirectories(run.resolve("results"));
    AtomicFiles.write(bundle(shard, attempt), out -> {
      Files.copy(bundle, out);
      return true;
    });
    AtomicFiles.writeString(lines(shard, attempt), String.join("\n", resultLines) + "\n");
  }

  @Override
  public Optional<Results> receiveResults(int shard, String attempt) throws IOException {
    try {
      List<String> text = Files.readAllLines(lines(shard, attempt), StandardCharsets.UTF_8).stream()
          .filter(l -> !l.isEmpty()).toList();
      return Files.isRegularFile(bundle(shard, attempt)) ? Optional.of(new Results(bundle(shard, attempt), text))
          : Optional.empty();
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
  }

  /**
   * The bundle, whole: the cache's importer checks every piece (a damaged one is an XlacException); with a run key
   * it must be signed by that key and no other.
   */
  @Override
  public void importResults(CacheStore store, Results back, List<GraphResult> lines, CompilerIdentity identity) {
    if (trusted == null) {
      store.importBundle(back.bundle());
    } else {
      store.importBundle(back.bundle(), new ImportRequest(List.of(trusted)));
    }
  }

  /** Removes the results ({@code shard-I.A.tsv} first: it says that a bundle is there, then the bundle). */
  @Override
  public void discard(int shard, Results back) {
    if (back.bundle() == null) {
      return;
    }
    String name = back.bundle().getFileName().toString();
    try {
      if (name.endsWith(".bundle")) {
        Files.deleteIfExists(back.bundle().resolveSibling(name.substring(0, name.length() - ".bundle".length())
            + ".tsv"));
      }
      Files.deleteIfExists(back.bundle());
    } catch (IOException e) {
      // the next attempt's results have names of their own: these are never read again
    }
  }

  @Override
  public void done(int shard) {
    try {
      for (Path f : resultFiles(shard, ".bundle")) {
        Files.deleteIfExists(f);
      }
      FileTrees.deleteTree(inputs(shard));
    } catch (IOException e) {
      // Only space is lost; the next run uses a new directory.
    }
  }

  @Override
  public String describe() {
    return run.toString();
  }
}
