package dev.xlac.capture;

import dev.xlac.core.JsonStringList;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronFiles;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Finds the compiler inputs that appear under a staging directory while the traced command runs,
 * and hands each to a {@link CaptureListener} once.
 *
 * <p>XLA and Neuron write their files in place (no rename), so a file seen in one poll may be half
 * written. A file is read as soon as one of two proofs says it is complete:
 *
 * <ul>
 *   <li><b>Closed</b> (Linux, when the watcher knows the command's {@link CommandProcesses}): the
 *       file was listed, then the {@code /proc/<pid>/fd} links of the command and all its
 *       descendants were read, and none of them holds it open, and it is not empty. XLA opens,
 *       writes and closes each dump file once (tsl {@code WriteStringToFile}: {@code
 *       NewWritableFile}, {@code Append}, {@code Close}), so a file that exists and is no longer
 *       open is written. For Neuron, the module's {@code compile_flags.json} must also exist and
 *       be closed, because the two files are written one after the other.
 *   <li><b>Stable</b>: its size and modification time are the same in two consecutive polls. This
 *       is the only rule when the open-file check is unavailable for a poll: no process
 *       information (directories given by hand, tests), no {@code /proc}, the command already
 *       ended, or the fd directory of one of its live processes cannot be read.
 * </ul>
 *
 * <p>A read that still fails is retried in later polls, and in the last poll (after the command
 * ended, when nothing writes any more) a failure is final and reported. Polling rather than a
 * {@code WatchService} because the per-process directories appear while the command runs, at any
 * depth, and a poll also re-checks files whose first read failed.
 */
public final class DumpWatcher {
  private final Path root;
  private final Frontend frontend;
  private final Pattern moduleFilter;
  private final CaptureListener listener;
  private final CommandProcesses processes;
  private final HloModuleReader reader = new HloModuleReader();
  private final Map<Path, Seen> files = new TreeMap<>();
  private Path realRoot; // fd links name real paths; resolved once the root exists
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
   * A watcher that reads a file once it held still across two polls (no process information).
   *
   * @param moduleFilter null for all modules; otherwise a module is kept when the pattern is found
   *     in its name
   */
  public DumpWatcher(Path root, Frontend frontend, Pattern moduleFilter, CaptureListener listener) {
    this(root, frontend, moduleFilter, listener, null);
  }

  /**
   * @param moduleFilter null for all modules; otherwise a module is kept when the pattern is found
   *     in its name
   * @param processes the processes that write the dumps, for the open-file check; null for none
   */
  public DumpWatcher(Path root, Frontend frontend, Pattern moduleFilter, CaptureListener listener,
      CommandProcesses processes) {
    this.root = root;
    this.frontend = frontend;
    this.moduleFilter = moduleFilter;
    this.listener = listener;
    this.processes = processes;
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
    List<Candidate> pending = new ArrayList<>();
    for (Candidate c : candidates()) {
      if (!files.computeIfAbsent(c.path(), k -> new Seen()).done) {
        pending.add(c);
      }
    }
    // Listed first, then the open files: a listed file that is not open now has been closed.
    Set<Path> withFlags = new HashSet<>();
    if (frontend == Frontend.NEURON) {
      pending.stream().map(Candidate::path).filter(f -> Files.isRegularFile(f.resolveSibling(NeuronFiles.FLAGS)))
          .forEach(withFlags::add);
    }
    Set<Path> open = last || pending.isEmpty() ? null : openFiles();
    for (Candidate c : pending) {
      Path f = c.path();
      Seen s = files.get(f);
      // As listed: a file removed since (a Neuron lock dance, a user cleaning up) fails its read
      // below and is tried again next poll, or in the last poll left out as it was before.
      long size = c.attributes().size();
      long mtime = c.attributes().lastModifiedTime().toMillis();
      boolean stable = size > 0 && size == s.size && mtime == s.mtime;
      s.size = size;
      s.mtime = mtime;
      boolean complete = switch (open == null ? Writing.UNKNOWN : writing(f, open, withFlags.contains(f))) {
        case OPEN -> false; // whatever its size did: its writer may append more
        case CLOSED -> size > 0;
        case UNKNOWN -> stable;
      };
      if (!complete && !last) {
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
          if (Files.exists(f)) { // one removed since the listing is no dump that was lost
            unreadable++;
            listener.unreadable(e);
          }
        }
      }
    }
  }

  /** The files under the root that the command holds open; null when that is unknown this poll. */
  private Set<Path> openFiles() {
    if (processes == null) {
      return null;
    }
    if (realRoot == null) {
      try {
        realRoot = root.toRealPath();
      } catch (IOException e) {
        return null;
      }
    }
    return OpenFiles.heldUnder(realRoot, processes.now()).orElse(null);
  }

  private enum Writing { OPEN, CLOSED, UNKNOWN }

  /** Whether the command still writes a listed file, given what it held open after the listing. */
  private Writing writing(Path file, Set<Path> open, boolean flagsListed) {
    if (open.contains(realRoot.resolve(root.relativize(file)))) {
      return Writing.OPEN;
    }
    if (frontend != Frontend.NEURON) {
      return Writing.CLOSED;
    }
    // A Neuron module is its proto and its flags: both must be there and closed. Without the
    // flags file (not written yet, or never by this Neuron version) the stable rule decides.
    if (!flagsListed) {
      return Writing.UNKNOWN;
    }
    Path flags = file.resolveSibling(NeuronFiles.FLAGS);
    return open.contains(realRoot.resolve(root.relativize(flags))) ? Writing.OPEN : Writing.CLOSED;
  }

  /** A compiler input as the listing found it. */
  private record Candidate(Path path, BasicFileAttributes attributes) {}

  /** The compiler inputs under the root, in path order, with the attributes the walk read anyway. */
  private List<Candidate> candidates() {
    List<Candidate> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          if (attrs.isRegularFile() && isCandidate(file)) {
            out.add(new Candidate(file, attrs));
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
      return name.equals(NeuronFiles.HLO) && file.getParent() != null
          && NeuronFiles.isModuleDirectory(file.getParent().getFileName().toString());
    }
    // Only XLA's before_optimizations protos: snapshots (if the user asked for them) hold the
    // optimised module, a second copy of a graph already captured.
    return DumpFileName.of(name).isBeforeOptimizationsProto();
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
    Path flagsFile = moduleDir.resolve(NeuronFiles.FLAGS);
    if (Files.isRegularFile(flagsFile)) {
      try {
        flagsJson = Files.readString(flagsFile);
        flags = JsonStringList.parse(flagsJson);
      } catch (IOException | IllegalArgumentException e) {
        throw new HloReadException(flagsFile,
            e instanceof IOException ? "cannot read it (" + XlacException.reason(e) + ")" : e.getMessage());
      }
    }
    return Optional.of(new CapturedModule.NeuronModule(moduleDir.getFileName().toString(),
        compilerDir == null || compilerDir.equals(root) ? "" : compilerDir.getFileName().toString(), flags,
        flagsJson));
  }
}
