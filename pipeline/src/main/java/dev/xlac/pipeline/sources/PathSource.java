package dev.xlac.pipeline.sources;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.PutOutcome;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.DumpDirectoryReader;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloBatchReader;
import dev.xlac.hlo.LoadedModule;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Graphs from dump files and directories: reads them (in parallel on one pool, under one byte budget, so memory
 * stays bounded) and hands every compiler-input module to the {@link CacheIntake}, which stores it as a
 * pending graph, deduplicated by fingerprint; then syncs the write-ahead log. Unreadable files are
 * collected, not fatal. Serves {@code cache add} ({@link CacheIntake#addPaths}) and {@code parallel-compile PATH...}
 * (which compiles the graphs it read).
 */
public final class PathSource {
  /**
   * What an ingest did.
   *
   * @param skipped files in the directories that are not compiler inputs (optimised modules, logs, text dumps)
   * @param notes one-line notes for the user about skipped files
   * @param scanErrors paths that could not be searched, each naming the path and the reason
   * @param readErrors files that could not be read, each naming the file and the reason, in file order
   * @param graphs the fingerprint and module name of every graph read (added or already present), in
   *     file order; a fingerprint read twice keeps the name it was first read with
   * @param paths the PATHs as given
   * @param newGraphs the graphs this ingest added to the cache (fingerprint -> module name), in file order
   */
  public record Result(int added, int alreadyPresent, int skipped, List<String> notes,
      List<XlacException> scanErrors, List<XlacException> readErrors, SequencedMap<GraphFingerprint, String> graphs,
      List<Path> paths, SequencedMap<GraphFingerprint, String> newGraphs) {
    /** Every path that could not be searched or read: the scan's first, then the files'. */
    public List<XlacException> errors() {
      return Stream.concat(scanErrors.stream(), readErrors.stream()).toList();
    }

    /**
     * What the inputs add to the exit code: the worst of the unreadable paths', and BAD_INPUT when
     * the PATHs held no module at all and nothing failed to be read.
     */
    public ExitCode exitCode() {
      ExitCode code = errors().stream().map(XlacException::exitCode).reduce(ExitCode.OK, ExitCode::worst);
      return noModules() ? code.worst(ExitCode.BAD_INPUT) : code;
    }

    /** The PATHs held no module and nothing failed to be read: "no HLO modules found". */
    public boolean noModules() {
      return added + alreadyPresent == 0 && errors().isEmpty();
    }
  }

  /**
   * One module file read by {@link #read}: {@code fn}'s value for it, or why it could not be read.
   */
  public record Read<T>(Path file, T value, XlacException error) {
    public boolean ok() {
      return error == null;
    }
  }

  /**
   * What reading PATHs found, storing nothing ({@code xlac hash}): the scan's notes and the paths it could not
   * search, then one {@link Read} per compiler input, in file order.
   *
   * @param paths the PATHs as given
   */
  public record Listing<T>(List<String> notes, List<XlacException> scanErrors, List<Read<T>> reads, List<Path> paths) {
    /** The PATHs held no compiler input and none failed to be searched: "no HLO modules found". */
    public boolean noModules() {
      return reads.isEmpty() && scanErrors.isEmpty();
    }
  }

  /**
   * Searches {@code paths} for compiler inputs, reads them in parallel and applies {@code fn} to each module (on a
   * reader thread); stores nothing.
   */
  public static <T> Listing<T> read(List<Path> paths, Function<LoadedModule, T> fn) throws InterruptedException {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    List<Read<T>> reads = new ArrayList<>();
    HloBatchReader.withDefaults().readEach(scan.inputs(), fn, o -> reads.add(new Read<>(o.file(), o.value(),
        o.error())));
    return new Listing<>(scan.notes(), List.<XlacException>copyOf(scan.errors()), List.copyOf(reads),
        List.copyOf(paths));
  }

  private record Stored(GraphFingerprint fingerprint, String moduleName, PutOutcome outcome) {}

  private PathSource() {}

  /** Stores the modules in {@code paths} as pending graphs; unreadable files are in the result, not fatal. */
  public static Result ingest(CacheStore store, List<Path> paths) throws InterruptedException {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    List<XlacException> errors = new ArrayList<>();
    SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
    SequencedMap<GraphFingerprint, String> added = new LinkedHashMap<>();
    int[] addedAndPresent = new int[2];
    HloBatchReader.withDefaults().readEach(scan.inputs(),
        m -> new Stored(m.fingerprint(), m.moduleName(), store.putGraph(m)), o -> {
          if (!o.ok()) {
            errors.add(o.error());
            return;
          }
          graphs.putIfAbsent(o.value().fingerprint(), o.value().moduleName());
          addedAndPresent[o.value().outcome() == PutOutcome.ADDED ? 0 : 1]++;
          if (o.value().outcome() == PutOutcome.ADDED) {
            added.putIfAbsent(o.value().fingerprint(), o.value().moduleName());
          }
        });
    store.sync();
    return new Result(addedAndPresent[0], addedAndPresent[1], scan.skippedFiles() + scan.textDumps().size(), scan.notes(),
        List.<XlacException>copyOf(scan.errors()), List.copyOf(errors), Collections.unmodifiableSequencedMap(graphs),
        List.copyOf(paths), Collections.unmodifiableSequencedMap(added));
  }
}
