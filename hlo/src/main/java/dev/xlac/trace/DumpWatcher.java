package dev.xlac.trace;

import dev.xlac.core.JsonStringList;
import dev.xlac.hlo.DumpFileName;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.LoadedModule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Finds the compiler inputs that appear under a staging directory while the traced command runs,
 * and hands each to a {@link CaptureListener} once.
 *
 * <p>XLA and Neuron write their files in place (no rename), so a file seen in one poll may be half
 * written. A file is read only once its size and modification time are the same in two
 * consecutive polls; a read that still fails is retried in later polls, and in the last poll
 * (after the command ended, when nothing writes any more) a failure is final and reported.
 * Polling rather than a {@code WatchService} because the per-process directories appear while
 * the command runs, at any depth, and a poll also re-checks files whose first read failed.
 */
public final class DumpWatcher {
  private static final Pattern NEURON_MODULE_DIR = Pattern.compile("MODULE_[^/]+");

  private final Path root;
  private final Frontend frontend;
  private final Pattern moduleFilter;
  private final CaptureListener listener;
  private final HloModuleReader reader = new HloModuleReader();
  private final Map<Path, Seen> files = new TreeMap<>();
  private int captured;
  private int filteredOut;
  private int unreadable;

  /** Size and mtime at the last poll; done once captured, filtered out or reported. */
  private static final class Seen {
    long size = -1;
    long mtime = -1;
    boolean done;
  }

  /** What the watcher found so far. */
  public record Counts(int captured, int filteredOut, int unreadable) {}

  /**
   * @param moduleFilter null for all modules; otherwise a module is kept when the pattern is found
   *     in its name
   */
  public DumpWatcher(Path root, Frontend frontend, Pattern moduleFilter, CaptureListener listener) {
    this.root = root;
    this.frontend = frontend;
    this.moduleFilter = moduleFilter;
    this.listener = listener;
  }

  public synchronized Counts counts() {
    return new Counts(captured, filteredOut, unreadable);
  }

  /**
   * One pass over the staging directory.
   *
   * @param last true after the command has ended: read every remaining file and report failures
   */
  public synchronized void poll(boolean last) {
    for (Path f : candidates()) {
      Seen s = files.computeIfAbsent(f, k -> new Seen());
      if (s.done) {
        continue;
      }
      long size;
      long mtime;
      try {
        size = Files.size(f);
        mtime = Files.getLastModifiedTime(f).toMillis();
      } catch (IOException e) {
        continue; // removed meanwhile (a Neuron lock dance, a user cleaning up): try again next poll
      }
      boolean stable = size > 0 && size == s.size && mtime == s.mtime;
      s.size = size;
      s.mtime = mtime;
      if (!stable && !last) {
        continue;
      }
      try {
        LoadedModule m = frontend == Frontend.NEURON ? reader.read(f, HloFileKind.HLO_MODULE) : reader.read(f);
        Optional<CapturedModule.NeuronModule> neuron = neuronModule(f);
        s.done = true;
        if (moduleFilter != null && !moduleFilter.matcher(m.moduleName()).find()) {
          filteredOut++;
          continue;
        }
        listener.captured(new CapturedModule(m, processOf(f), neuron));
        captured++;
      } catch (HloReadException e) {
        if (last) {
          s.done = true;
          unreadable++;
          listener.unreadable(e);
        }
      }
    }
  }

  /** The compiler inputs under the root, in path order. */
  private List<Path> candidates() {
    List<Path> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          if (attrs.isRegularFile() && isCandidate(file)) {
            out.add(file);
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          return FileVisitResult.CONTINUE; // vanished or not yet readable: the next poll sees it
        }
      });
    } catch (NoSuchFileException e) {
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private boolean isCandidate(Path file) {
    String name = file.getFileName().toString();
    if (frontend == Frontend.NEURON) {
      return name.equals("model.hlo_module.pb") && file.getParent() != null
          && NEURON_MODULE_DIR.matcher(file.getParent().getFileName().toString()).matches();
    }
    // Only XLA's before_optimizations protos: snapshots (if the user asked for them) hold the
    // optimised module, a second copy of a graph already captured.
    DumpFileName d = DumpFileName.of(name);
    return d.role() == DumpFileName.Role.COMPILER_INPUT && d.kind().orElse(null) == HloFileKind.HLO_PROTO
        && name.contains(".before_optimizations.");
  }

  private String processOf(Path file) {
    Path rel = root.relativize(file);
    return rel.getNameCount() > 1 ? rel.getName(0).toString() : ".";
  }

  private Optional<CapturedModule.NeuronModule> neuronModule(Path file) {
    if (frontend != Frontend.NEURON) {
      return Optional.empty();
    }
    Path moduleDir = file.getParent();
    Path compilerDir = moduleDir.getParent();
    List<String> flags = List.of();
    String flagsJson = null;
    Path flagsFile = moduleDir.resolve("compile_flags.json");
    if (Files.isRegularFile(flagsFile)) {
      try {
        flagsJson = Files.readString(flagsFile);
        flags = JsonStringList.parse(flagsJson);
      } catch (IOException | IllegalArgumentException e) {
        throw new HloReadException(flagsFile, e instanceof IOException ? "cannot read it (" + e + ")" : e.getMessage());
      }
    }
    return Optional.of(new CapturedModule.NeuronModule(moduleDir.getFileName().toString(),
        compilerDir == null || compilerDir.equals(root) ? "" : compilerDir.getFileName().toString(), flags,
        flagsJson));
  }
}
