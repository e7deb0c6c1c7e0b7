package dev.xlac.cache;

import dev.xlac.cache.store.Keys;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.util.HexFormat;

/**
 * What an artifact is stored under: the graph's fingerprint and the compiler that made it. The
 * same graph compiled for trn1 and for the CPU is two keys. In the database the key is the 32
 * digest bytes of the fingerprint followed by the 32 bytes of {@link CompilerIdentity#digest()},
 * so all artifacts of one graph are adjacent.
 */
public record ArtifactKey(GraphFingerprint graph, CompilerIdentity compiler) {

  public ArtifactKey {
    java.util.Objects.requireNonNull(graph, "graph");
    java.util.Objects.requireNonNull(compiler, "compiler");
  }

  /** Hex SHA-256 of the compiler identity. */
  public String compilerDigest() {
    return compiler.digest();
  }

  public byte[] bytes() {
    return Keys.artifact(graph.digest(), HexFormat.of().parseHex(compilerDigest()));
  }

  @Override
  public String toString() {
    return graph.shortForm() + "/" + compiler.shortName() + "@" + compilerDigest().substring(0, 12);
  }
}
