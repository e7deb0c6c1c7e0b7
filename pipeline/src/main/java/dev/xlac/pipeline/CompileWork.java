package dev.xlac.pipeline;

import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;

/**
 * One program a compile run may have to compile for its compiler: a graph of the cache, or a request the runtime
 * recorded. {@link CacheResults#settled} is the one rule that decides whether it still lacks an artifact for
 * the run's compiler.
 */
public sealed interface CompileWork permits CompileWork.Graph, CompileWork.Request {
  /** The key its result is reported and stored under. */
  ProgramKey key();

  /** The name messages and reports show. */
  String name();

  /** A graph: its artifact is stored under (fingerprint, compiler identity). */
  record Graph(GraphFingerprint key, String name) implements CompileWork {}

  /**
   * A recorded request to compile for another plugin: stored as a runtime entry under {@code key}, the key the
   * proxy computes when a training run sends this program to that plugin.
   *
   * @param key the request key for the run's plugin
   * @param recorded the key it was recorded under (where its program and options are read from)
   * @param format the PJRT program format
   * @param options the serialized {@code CompileOptionsProto} as the framework passed it
   * @param identityText the run's plugin identity text (part of {@code key})
   * @param program the program as the run's plugin gets it, when it travelled with the request (a Slurm shard's
   *     node, whose cache does not hold the recorded request); null: read from the cache under {@code recorded}
   */
  record Request(RequestKey key, RequestKey recorded, String name, String format, byte[] options,
      String identityText, byte[] program) implements CompileWork {}
}
