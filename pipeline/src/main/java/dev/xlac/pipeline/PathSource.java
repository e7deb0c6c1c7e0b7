package dev.xlac.cache;

import dev.xlac.core.XlacException;
import dev.xlac.hlo.DumpDirectoryReader;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloBatchReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.stream.Stream;

/**
 * Reads dump files and directories (in parallel, a chunk at a time so memory stays bounded) and
 * stores every compiler-input module as a pending graph, deduplicated by fingerprint; then syncs the
 * write-ahead log. Unreadable files are collected, not fatal. Serves {@code cache add} and
 * {@code parallel-compile PATH...} (which compiles the graphs it read).
 */
public final class GraphIngest {
  private static final int CHUNK = 64;

  /**
   * What an ingest did.
   *
   * @param skipped files in the directories that are not compiler inputs (optimised modules, logs, text dumps)
   * @param notes one-line notes for the user about skipped files
   * @param scanErrors paths that could not be searched, each naming the path and the reason
   * @param readErrors files that could not be read, each naming the file and the reason, in file order
   * @param graphs the fingerprint and module name of every graph read (added or already present), in
   *     file order; a fingerprint read twice keeps the name it was first read with
   */
  public record Result(int added, int alreadyPresent, int skipped, List<String> notes,
      List<XlacException> scanErrors, List<XlacException> readErrors, SequencedMap<GraphFingerprint, String> graphs) {
    /** Every path that could not be searched or read: the scan's first, then the files'. */
    public List<XlacException> errors() {
      return Stream.concat(scanErrors.stream(), readErrors.stream()).toList();
    }
  }

  private record Stored(GraphFingerprint fingerprint, String moduleName, PutOutcome outcome) {}

  private GraphIngest() {}

  public static Result ingest(CacheStore store, List<Path> paths) throws InterruptedException {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    List<XlacException> errors = new ArrayList<>();
    SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
    int added = 0;
    int present = 0;
    HloBatchReader reader = HloBatchReader.withDefaults();
    List<Path> files = scan.inputs();
    for (int i = 0; i < files.size(); i += CHUNK) {
      List<HloBatchReader.Outcome<Stored>> outcomes = reader.read(files.subList(i, Math.min(files.size(), i + CHUNK)),
          m -> new Stored(m.fingerprint(), m.moduleName(), store.putGraph(m)));
      for (HloBatchReader.Outcome<Stored> o : outcomes) {
        if (!o.ok()) {
          errors.add(o.error());
          continue;
        }
        graphs.putIfAbsent(o.value().fingerprint(), o.value().moduleName());
        if (o.value().outcome() == PutOutcome.ADDED) {
          added++;
        } else {
          present++;
        }
      }
    }
    store.sync();
    return new Result(added, present, scan.skippedFiles() + scan.textDumps().size(), scan.notes(),
        List.<XlacException>copyOf(scan.errors()), List.copyOf(errors), Collections.unmodifiableSequencedMap(graphs));
  }
}
