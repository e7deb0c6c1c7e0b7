package dev.xlac.cache;

import dev.xlac.core.XlacException;
import dev.xlac.hlo.DumpDirectoryReader;
import dev.xlac.hlo.HloBatchReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code cache add}: reads dump files and directories (in parallel, a chunk at a time so memory
 * stays bounded) and stores every compiler-input module as a pending graph, deduplicated by
 * fingerprint. Unreadable files are collected, not fatal.
 */
public final class GraphIngest {
  private static final int CHUNK = 64;

  /**
   * What an ingest did.
   *
   * @param skipped files in the directories that are not compiler inputs (optimised modules, logs, text dumps)
   * @param notes one-line notes for the user about skipped files
   * @param errors files that could not be read, each naming the file and the reason
   */
  public record Result(int added, int alreadyPresent, int skipped, List<String> notes, List<XlacException> errors) {}

  private GraphIngest() {}

  public static Result ingest(CacheStore store, List<Path> paths) throws InterruptedException {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    List<XlacException> errors = new ArrayList<>(scan.errors());
    int added = 0;
    int present = 0;
    HloBatchReader reader = HloBatchReader.withDefaults();
    List<Path> files = scan.inputs();
    for (int i = 0; i < files.size(); i += CHUNK) {
      List<HloBatchReader.Outcome<PutOutcome>> outcomes = reader.read(files.subList(i, Math.min(files.size(), i + CHUNK)),
          store::putGraph);
      for (HloBatchReader.Outcome<PutOutcome> o : outcomes) {
        if (!o.ok()) {
          errors.add(o.error());
        } else if (o.value() == PutOutcome.ADDED) {
          added++;
        } else {
          present++;
        }
      }
    }
    store.sync();
    return new Result(added, present, scan.skippedFiles() + scan.textDumps().size(), scan.notes(), List.copyOf(errors));
  }
}
