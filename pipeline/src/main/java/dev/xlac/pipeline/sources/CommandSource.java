package dev.xlac.pipeline.sources;

import dev.xlac.capture.CaptureListener;
import dev.xlac.capture.CapturedModule;
import dev.xlac.capture.CommandNotRunnableException;
import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.NotRunnable;
import dev.xlac.capture.StagingDirectories;
import dev.xlac.hlo.HloReadException;
import dev.xlac.pipeline.recording.RecordingResult;
import dev.xlac.pipeline.recording.RuntimeRecording;
import java.nio.file.Path;

/**
 * Graphs from a running command: owns the staging directories of one traced run (made when this is
 * created, so a bad {@code --keep-dumps} is reported before the cache is opened) and runs the
 * command under {@link CommandTracer}, handing every capture to a listener until the run ends.
 * A command that cannot run at all is an outcome ({@link Traced#notRunnable()}), not an exception.
 */
public final class CommandSource implements AutoCloseable {
  /**
   * @param outcome how the command ended; null when it could not run
   * @param notRunnable why it could not run (127: not found, 126: cannot be run), or null
   */
  public record Traced(CommandTracer.Outcome outcome, NotRunnable notRunnable) {}

  private final TraceSpec spec;
  private final StagingDirectories dirs;
  private final RuntimeRecording recording;

  private CommandSource(TraceSpec spec, StagingDirectories dirs, RuntimeRecording recording) {
    this.spec = spec;
    this.dirs = dirs;
    this.recording = recording;
  }

  /**
   * Checks what can be checked before anything runs: the recording's plugin (exit 3), then
   * {@code --keep-dumps} (exit 2).
   */
  public static CommandSource create(TraceSpec spec) {
    RuntimeRecording recording = spec.recording() == null ? null
        : RuntimeRecording.prepare(spec.recording().plugin(), spec.recording().cacheDir());
    try {
      return new CommandSource(spec, StagingDirectories.create(spec.keepDumps()), recording);
    } catch (RuntimeException e) {
      if (recording != null) {
        recording.close();
      }
      throw e;
    }
  }

  /** After {@link #run}: what was recorded through the runtime proxy, now in {@code store}; null without recording. */
  public RecordingResult ingestRecording(dev.xlac.cache.CacheStore store, java.util.function.Consumer<String> problems) {
    return recording == null ? null : recording.ingest(store, problems);
  }

  /**
   * Runs the command; {@code listener} gets the captures while it runs, and none after this
   * returns (the tracer's watcher may outlive an interrupted run).
   */
  public Traced run(CaptureListener listener) throws InterruptedException {
    Gate gate = new Gate(listener);
    java.util.List<String> notes = new java.util.ArrayList<>();
    java.util.Map<String, String> env = recording == null ? spec.env() : recording.environment(spec.env(), notes);
    try {
      CommandTracer.Outcome o = CommandTracer.run(new CommandTracer.Request(spec.command(), spec.frontend(),
          dirs.dumps(), spec.moduleFilter(), env, spec.pollInterval()), gate);
      if (!notes.isEmpty()) {
        notes.addAll(o.notes());
        o = new CommandTracer.Outcome(o.exitStatus(), o.frontend(), o.counts(), o.signalForwarded(), notes);
      }
      return new Traced(o, null);
    } catch (CommandNotRunnableException e) {
      return new Traced(null, new NotRunnable(e.status(), e.getMessage()));
    } finally {
      gate.close();
    }
  }

  /** Where the dumps are kept after the run, or null when they are removed. */
  public Path keptDumps() {
    return dirs.keptDumps() ? dirs.dumps() : null;
  }

  @Override
  public void close() {
    dirs.close();
    if (recording != null) {
      recording.close();
    }
  }

  /** Passes captures on until closed; a capture in progress finishes before {@link #close()} returns. */
  private static final class Gate implements CaptureListener {
    private final CaptureListener next;
    private boolean closed;

    Gate(CaptureListener next) {
      this.next = next;
    }

    @Override
    public synchronized void captured(CapturedModule module) {
      if (!closed) {
        next.captured(module);
      }
    }

    @Override
    public synchronized void unreadable(HloReadException error) {
      if (!closed) {
        next.unreadable(error);
      }
    }

    synchronized void close() {
      closed = true;
    }
  }
}
