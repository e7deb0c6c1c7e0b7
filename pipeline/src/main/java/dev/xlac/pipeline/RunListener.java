package dev.xlac.pipeline;

import dev.xlac.compiler.schedule.CompileListener;
import dev.xlac.pipeline.sources.PathSource;

/**
 * What a compile run tells its user while it runs, on top of each graph's progress
 * ({@link CompileListener}). The CLI's progress printer implements it; {@link #NONE} says nothing.
 * Called from the run's thread, the probe, the trace's watcher and the workers: implementations
 * synchronize. Every method has a no-op default.
 */
public interface RunListener extends CompileListener {
  RunListener NONE = new RunListener() {};

  /** {@code parallel-compile PATH...}: the PATHs were read and stored; before {@link #planned}. */
  default void inputsRead(PathSource.Result inputs) {}

  /** A fixed list of graphs: what the run will do, before the first compile starts. */
  default void planned(int graphs, int cached, int toCompile, int jobs) {}

  /** A traced command: graphs are compiled as {@code command} dumps them. */
  default void streaming(String command, int jobs) {}

  /** A dumped file could not be read (its message names it); the others are still taken. */
  default void unreadable(String message) {}

  /** A one-line notice for the user (the remote tier's warning); printed as {@link #unreadable} prints. */
  default void notice(String line) {
    unreadable(line);
  }

  /** The traced command ended: no more graphs come; {@code line} says what was captured. */
  default void captureEnded(String line) {}

  /** How far the compiles got, e.g. {@code 5/8}; used in the capture-ended line. */
  default String doneOfTotal() {
    return "";
  }

  /** The run is over; nothing is reported after this. */
  default void close() {}
}
