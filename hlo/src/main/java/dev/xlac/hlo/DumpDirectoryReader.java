package dev.xlac.hlo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Expands the paths a user names into the files to read. Files named directly are always read;
 * directories are walked (without following links) and only compiler inputs are taken: XLA's
 * {@code before_optimizations} protos, snapshots and Neuron's {@code *.hlo_module.pb}. Everything
 * else XLA writes beside them is counted as skipped, and text dumps are counted separately so
 * the user can be told to dump protos.
 *
 * <p>XLA's snapshots carry the module as the executable holds it, that is after optimisation, so
 * in a directory a snapshot is taken only when no {@code before_optimizations} proto of the same
 * dump (same directory and module number) is there; otherwise it would add a second, optimised
 * copy of a graph already captured.
 */
public final class DumpDirectoryReader {
  private DumpDirectoryReader() {}

  /** The outcome of a scan. {@code inputs} are sorted and distinct. */
  public record Scan(List<Path> inputs, int skippedFiles, List<Path> textDumps, List<HloReadException> errors) {

    /** One line for the user about what was left out, or empty when nothing was. */
    public List<String> notes() {
      List<String> notes = new ArrayList<>();
      if (skippedFiles > 0) {
        notes.add("skipped " + skippedFiles + " other dump file" + (skippedFiles == 1 ? "" : "s")
            + " (optimised modules, per-pass dumps, logs); only compiler inputs are read");
      }
      if (!textDumps.isEmpty()) {
        notes.add("found " + textDumps.size() + " HLO text dump" + (textDumps.size() == 1 ? "" : "s") + " (e.g. "
            + textDumps.getFirst() + "); xlac reads protos: dump with XLA_FLAGS=--xla_dump_hlo_as_proto");
      }
      return notes;
    }
  }

  private static final Pattern DUMP_PREFIX = Pattern.compile("^(?:\\d+\\.)?(module_\\d+)\\.");

  /** Directory plus module number: identifies one module of one process's dump. */
  private static Optional<String> dumpKey(Path f) {
    Matcher m = DUMP_PREFIX.matcher(f.getFileName().toString());
    return m.find() ? Optional.of(f.getParent() + "/" + m.group(1)) : Optional.empty();
  }

  public static Scan scan(List<Path> paths) {
    TreeSet<Path> inputs = new TreeSet<>();
    List<Path> text = new ArrayList<>();
    List<HloReadException> errors = new ArrayList<>();
    int[] skipped = {0};
    for (Path p : paths) {
      if (!Files.exists(p)) {
        errors.add(new HloReadException(p, "no such file or directory"));
      } else if (!Files.isDirectory(p)) {
        inputs.add(p.normalize());
      } else {
        try {
          Files.walkFileTree(p, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
              if (!attrs.isRegularFile()) {
                return FileVisitResult.CONTINUE;
              }
              switch (DumpFileName.of(file.getFileName().toString()).role()) {
                case COMPILER_INPUT -> inputs.add(file.normalize());
                case TEXT_INPUT -> text.add(file);
                case OTHER -> skipped[0]++;
              }
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
              errors.add(new HloReadException(file, "cannot be listed (" + e.getClass().getSimpleName() + ")"));
              return FileVisitResult.CONTINUE;
            }
          });
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
    int found = inputs.size();
    Set<String> beforeOpt = new HashSet<>();
    for (Path f : inputs) {
      if (DumpFileName.of(f.getFileName().toString()).isBeforeOptimizationsProto()) {
        dumpKey(f).ifPresent(beforeOpt::add);
      }
    }
    inputs.removeIf(f -> DumpFileName.of(f.getFileName().toString()).kind().orElse(null) == HloFileKind.HLO_SNAPSHOT
        && !paths.contains(f) && dumpKey(f).map(beforeOpt::contains).orElse(false));
    int redundantSnapshots = found - inputs.size();
    text.sort(null);
    return new Scan(List.copyOf(inputs), skipped[0] + redundantSnapshots, List.copyOf(text), List.copyOf(errors));
  }
}
