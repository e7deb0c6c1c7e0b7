package dev.xlac.cache.layout;

import static dev.xlac.core.neuron.NeuronFiles.DONE;
import static dev.xlac.core.neuron.NeuronFiles.FLAGS;
import static dev.xlac.core.neuron.NeuronFiles.HLO;
import static dev.xlac.core.neuron.NeuronFiles.LOG;
import static dev.xlac.core.neuron.NeuronFiles.NEFF;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphEntry;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.NewFailure;
import dev.xlac.cache.PutOutcome;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.neuron.NeuronFiles;
import dev.xlac.core.neuron.NeuronLogs;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.LoadedModule;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * AWS Neuron's compile cache layout, in both directions:
 *
 * <pre>
 * DIR/neuronxcc-&lt;compiler version&gt;/MODULE_&lt;graph hash&gt;+&lt;flags hash&gt;/
 *     model.hlo_module.pb   the graph, a bare HloModuleProto
 *     compile_flags.json    the flags, a JSON list of strings
 *     model.neff, model.done   a finished compile (the NEFF, then the marker)
 *     model.log             a failed compile's log (no NEFF)
 *     *.lock                held while a compile runs
 * </pre>
 *
 * <p>The compiler identity of an entry is {@link NeuronxCcIdentity#forCacheEntry}: the version from
 * the version directory, the target from the {@code --target} in its flags (default {@code trn1}),
 * the normalised flags. That is the identity {@code NeuronxCcDriver} reports for the same compiler
 * and flags, so a NEFF imported here is found by a later compile and the other way round. MODULE
 * names come from Neuron's unpublished hash and are kept as captured ({@link NeuronName}), never
 * recomputed; a graph that has none cannot be written back.
 */
public final class NeuronCacheLayout {
  /** The failure kind recorded for a Neuron cache entry that holds a failed compile's log. */
  public static final String FAILED_IN_NEURON_CACHE = "compile-error";
  private static final int BATCH_ENTRIES = 32;
  private static final long BATCH_BYTES = 256L << 20;

  private NeuronCacheLayout() {}

  /**
   * What {@link #ingest} did, per state of the entries.
   *
   * @param compiled entries with a NEFF and {@code model.done}: stored as compiled artifacts
   * @param failed entries with {@code model.log} and no NEFF: stored as failures with their log
   * @param pending entries with only the graph: stored as graphs
   * @param bad entries skipped, each reported in one line
   * @param staleLocks lock files found beside a finished compile and ignored (each reported)
   * @param graphsAdded graphs that were new to the cache
   */
  public record IngestResult(int compiled, int failed, int pending, int bad, int staleLocks, int graphsAdded) {
    public int entries() {
      return compiled + failed + pending;
    }
  }

  /**
   * Stores every entry of the Neuron cache {@code dir} in {@code store}: graphs (with their MODULE
   * names), compiled NEFFs and failures. A bad entry (unreadable or corrupt graph, unreadable flags,
   * zero-byte NEFF, NEFF without {@code model.done}, a lock without a finished compile) is reported
   * to {@code problems} in one line naming it and the reason, counted, and skipped; it never stops
   * the import. Re-running is harmless: what is already stored is left as it is.
   *
   * @throws XlacException (bad input) when {@code dir} is not a readable directory
   */
  public static IngestResult ingest(Path dir, CacheStore store, Consumer<String> problems) {
    if (!Files.isDirectory(dir)) {
      throw XlacException.badInput("cannot read Neuron cache " + dir + ": not a directory");
    }
    Ingest in = new Ingest(store, problems);
    for (Path version : sortedChildren(dir)) {
      String name = version.getFileName().toString();
      if (!Files.isDirectory(version) || !name.startsWith(NeuronFiles.VERSION_DIR_PREFIX)) {
        continue; // not part of the layout (Neuron keeps nothing else at the top; users may)
      }
      if (NeuronxCcIdentity.versionOfDirectory(name).isEmpty()) {
        in.bad(version, "is not a neuronxcc-<version> directory (no version number after the prefix)");
        continue;
      }
      List<Path> entries;
      try {
        entries = sortedChildren(version);
      } catch (XlacException e) {
        in.bad(version, "cannot be listed (" + e.getMessage() + ")");
        continue;
      }
      for (Path entry : entries) {
        if (Files.isDirectory(entry) && entry.getFileName().toString().startsWith(NeuronFiles.MODULE_PREFIX)) {
          in.entry(name, entry);
        }
      }
    }
    in.flush();
    return new IngestResult(in.compiled, in.failed, in.pending, in.bad, in.staleLocks, in.graphsAdded);
  }

  private static final class Ingest {
    final CacheStore store;
    final Consumer<String> problems;
    final HloModuleReader reader = new HloModuleReader();
    final List<CacheStore.NewArtifact> batch = new ArrayList<>();
    final List<NewFailure> failures = new ArrayList<>();
    /** The keys of {@link #failures}: the first failure met for a key is the one recorded. */
    final Set<ArtifactKey> failing = new java.util.HashSet<>();
    long batchBytes;
    int compiled, failed, pending, bad, staleLocks, graphsAdded;

    Ingest(CacheStore store, Consumer<String> problems) {
      this.store = store;
      this.problems = problems;
    }

    void bad(Path where, String why) {
      bad++;
      problems.accept("Neuron cache entry " + where + ": " + why);
    }

    void entry(String versionDir, Path entry) {
      try {
        Set<String> files = new TreeSet<>();
        try (Stream<Path> s = Files.list(entry)) {
          s.forEach(p -> files.add(p.getFileName().toString()));
        }
        List<String> locks = files.stream().filter(f -> f.endsWith(".lock")).toList();
        boolean done = files.contains(DONE);
        boolean neff = files.contains(NEFF);
        if (!locks.isEmpty() && !done) {
          bad(entry, "is locked (" + String.join(", ", locks) + ") and unfinished: a compile is running, or died and "
              + "left a stale lock; import again when it ends, or delete the lock");
          return;
        }
        if (!files.contains(HLO)) {
          bad(entry, "has no " + HLO);
          return;
        }
        if (neff && !done) {
          bad(entry, "has " + NEFF + " but no " + DONE + ": the compile did not finish");
          return;
        }
        if (done && !neff) {
          bad(entry, "has " + DONE + " but no " + NEFF);
          return;
        }
        String flagsJson = null;
        if (files.contains(FLAGS)) {
          try {
            flagsJson = readUtf8(entry.resolve(FLAGS));
          } catch (IOException e) {
            bad(entry, "unreadable " + FLAGS + " (" + XlacException.reason(e) + ")");
            return;
          }
        }
        NeuronName name;
        try {
          name = new NeuronName(versionDir, entry.getFileName().toString(), flagsJson);
        } catch (IllegalArgumentException e) {
          bad(entry, e.getMessage());
          return;
        }
        List<String> flags;
        try {
          flags = name.compileFlags();
        } catch (IllegalArgumentException e) {
          bad(entry, "unreadable " + FLAGS + " (" + e.getMessage() + ")");
          return;
        }
        CompilerIdentity identity = NeuronxCcIdentity.forCacheEntry(versionDir, flags);
        byte[] neffBytes = null;
        if (neff) {
          neffBytes = Files.readAllBytes(entry.resolve(NEFF));
          if (neffBytes.length == 0) {
            bad(entry, NEFF + " is empty (0 bytes)");
            return;
          }
        }
        String log = files.contains(LOG) ? readLossy(entry.resolve(LOG)) : null;
        Path hloFile = entry.resolve(HLO);
        byte[] hlo = Files.readAllBytes(hloFile);
        LoadedModule module;
        try {
          module = reader.parse(hloFile, HloFileKind.HLO_MODULE, hlo, hlo.length);
        } catch (HloReadException e) {
          bad(entry, HLO + " is not an HLO module (" + e.reason() + ")");
          return;
        }
        GraphEntry graph = new GraphEntry(module.fingerprint(), module.moduleName(), () -> hlo, hloFile.toString(),
            Optional.of(name));
        if (store.putGraph(graph) == PutOutcome.ADDED) {
          graphsAdded++;
        }
        for (String lock : locks) {
          staleLocks++;
          problems.accept("Neuron cache entry " + entry + ": stale lock " + lock + " beside a finished compile ignored");
        }
        ArtifactKey key = new ArtifactKey(module.fingerprint(), identity);
        Optional<ArtifactInfo> known = store.artifactInfo(key);
        if (neffBytes != null) {
          compiled++;
          if (known.isEmpty() || known.get().status() != EntryStatus.COMPILED) {
            batch.add(new CacheStore.NewArtifact(key, neffBytes, new CompileInfo(Duration.ZERO, log == null ? "" : log)));
            batchBytes += neffBytes.length;
            flushWhenFull();
          }
        } else if (log != null) {
          failed++;
          if (known.isEmpty() && failing.add(key)) {
            failures.add(new NewFailure(key, FAILED_IN_NEURON_CACHE, "failed in the Neuron cache ("
                + entry.getFileName() + ")" + NeuronLogs.firstErrorLine(log).map(l -> ": " + l).orElse(""), log));
            batchBytes += log.length();
            flushWhenFull();
          }
        } else {
          pending++;
        }
      } catch (IOException e) {
        bad(entry, "cannot be read (" + XlacException.reason(e) + ")");
      } catch (XlacException e) {
        bad(entry, e.getMessage());
      }
    }

    void flushWhenFull() {
      if (batch.size() + failures.size() >= BATCH_ENTRIES || batchBytes >= BATCH_BYTES) {
        flush();
      }
    }

    /** Stores the batched artifacts in one fsynced batch, then the batched failures in another. */
    void flush() {
      if (!batch.isEmpty()) {
        store.putArtifacts(List.copyOf(batch));
        batch.clear();
      }
      if (!failures.isEmpty()) {
        store.recordFailures(List.copyOf(failures));
        failures.clear();
        failing.clear();
      }
      batchBytes = 0;
    }
  }

  /**
   * What {@link #materialize} did.
   *
   * @param compiled entries written with {@code model.neff} and {@code model.done}
   * @param failed entries written with {@code model.log}
   * @param pending entries written with the graph only
   * @param filesWritten files created or replaced
   * @param filesUnchanged files already present with the same bytes (not rewritten)
   * @param withoutName graphs skipped because they have no Neuron MODULE name
   * @param problems entries not written (damaged in the cache), each reported
   */
  public record MaterializeResult(int compiled, int failed, int pending, int filesWritten, int filesUnchanged,
      int withoutName, int problems) {}

  /**
   * Writes every graph that has Neuron names into {@code dir} in Neuron's layout, under the same
   * version and MODULE directories it was imported from. Each file is written to a temporary file in
   * its directory, synced, and renamed over the target, so a reader (or a crash) never sees half a
   * file; {@code model.done} is written after {@code model.neff}. No lock files are made. A file that
   * already holds the same bytes is not touched, so re-running changes nothing.
   */
  public static MaterializeResult materialize(CacheStore store, Path dir, Consumer<String> problems) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw XlacException.environment("cannot create " + dir + ": " + XlacException.reason(e));
    }
    Writer w = new Writer();
    int compiled = 0;
    int failed = 0;
    int pending = 0;
    int withoutName = 0;
    int damaged = 0;
    for (GraphInfo g : store.graphs()) {
      if (g.neuronNames().isEmpty()) {
        withoutName++;
        continue;
      }
      Optional<byte[]> hlo = store.readGraph(g.fingerprint());
      if (hlo.isEmpty()) {
        damaged++;
        problems.accept("graph " + g.fingerprint().shortForm() + " (" + g.moduleName()
            + ") is damaged in the cache; not written (run 'xlac cache verify --repair')");
        continue;
      }
      for (NeuronName name : g.neuronNames()) {
        Path entry = dir.resolve(name.versionDirectory()).resolve(name.moduleDirectory());
        try {
          CompilerIdentity identity = NeuronxCcIdentity.forCacheEntry(name.versionDirectory(), name.compileFlags());
          ArtifactKey key = new ArtifactKey(g.fingerprint(), identity);
          Files.createDirectories(entry);
          w.write(entry.resolve(HLO), hlo.get());
          if (name.compileFlagsJson() != null) {
            w.write(entry.resolve(FLAGS), name.compileFlagsJson().getBytes(StandardCharsets.UTF_8));
          }
          EntryStatus status = store.artifactInfo(key).map(ArtifactInfo::status).orElse(EntryStatus.PENDING);
          if (status == EntryStatus.COMPILED) {
            // Streamed a chunk at a time, checked as it goes: a NEFF of any size, never held whole.
            if (!w.write(entry.resolve(NEFF), out -> store.readArtifact(key, out))) {
              damaged++;
              problems.accept("the NEFF of " + name.path() + " is damaged in the cache; written as pending");
              pending++;
              continue;
            }
            w.write(entry.resolve(DONE), new byte[0]);
            compiled++;
          } else if (status == EntryStatus.FAILED) {
            w.write(entry.resolve(LOG), store.log(key).getBytes(StandardCharsets.UTF_8));
            failed++;
          } else {
            pending++;
          }
        } catch (IOException e) {
          throw XlacException.environment("cannot write " + entry + ": " + XlacException.reason(e));
        } catch (IllegalArgumentException | XlacException e) {
          damaged++;
          problems.accept("cannot write " + name.path() + ": " + e.getMessage());
        }
      }
    }
    return new MaterializeResult(compiled, failed, pending, w.written, w.unchanged, withoutName, damaged);
  }

  /** Atomic file writes ({@link AtomicFiles}) that leave a file already holding the same bytes alone. */
  private static final class Writer {
    int written;
    int unchanged;

    void write(Path target, byte[] bytes) throws IOException {
      if (Files.isRegularFile(target) && Files.size(target) == bytes.length
          && Arrays.equals(Files.readAllBytes(target), bytes)) {
        unchanged++;
        return;
      }
      replace(target, out -> {
        out.write(bytes);
        return true;
      });
    }

    /**
     * Writes what {@code source} produces, streamed. A file that already holds exactly those bytes is
     * compared as they stream and left alone. Returns false (writing nothing) when the source fails.
     */
    boolean write(Path target, AtomicFiles.Body source) throws IOException {
      if (Files.isRegularFile(target)) {
        try (SameBytes same = new SameBytes(target)) {
          if (!source.writeTo(same)) {
            return false;
          }
          if (same.same()) {
            unchanged++;
            return true;
          }
        }
      }
      return replace(target, source);
    }

    /** Replaces {@code target} atomically ({@link AtomicFiles}); false (nothing written) when the source fails. */
    private boolean replace(Path target, AtomicFiles.Body source) throws IOException {
      if (!AtomicFiles.write(target, source)) {
        return false;
      }
      written++;
      return true;
    }
  }

  /** Compares what is written to it with a file's bytes, reading the file as the writes come. */
  private static final class SameBytes extends OutputStream {
    private final java.io.InputStream file;
    private final byte[] buffer = new byte[1 << 16];
    private boolean differs;

    SameBytes(Path file) throws IOException {
      this.file = new java.io.BufferedInputStream(Files.newInputStream(file), 1 << 16);
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      while (!differs && len > 0) {
        int n = file.readNBytes(buffer, 0, Math.min(len, buffer.length));
        if (n == 0 || !Arrays.equals(buffer, 0, n, b, off, off + n)) {
          differs = true;
        }
        off += n;
        len -= n;
      }
    }

    /** Whether everything written so far equals the file, and the file has no more bytes. */
    boolean same() throws IOException {
      return !differs && file.read() < 0;
    }

    @Override
    public void close() throws IOException {
      file.close();
    }
  }

  private static List<Path> sortedChildren(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    } catch (IOException e) {
      throw XlacException.badInput("cannot list Neuron cache directory " + dir + ": " + XlacException.reason(e));
    }
  }

  private static String readUtf8(Path f) throws IOException {
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(f))).toString();
    } catch (CharacterCodingException e) {
      throw new IOException("not UTF-8");
    }
  }

  private static String readLossy(Path f) throws IOException {
    return new String(Files.readAllBytes(f), StandardCharsets.UTF_8);
  }
}
