package dev.xlac.pipeline.explain;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;

/**
 * The program bytes a framework sends to another plugin, for a program it sent to a recorded one. JAX (through
 * XLA's PJRT C API client) sends a StableHLO <em>portable artifact</em> (format {@code mlir}) serialized for the
 * StableHLO version {@code min(its own, the plugin's stablehlo_current_version attribute)}; the artifact's header
 * names that version ({@code ML\xefR}, the bytecode version, then the producer {@code StableHLO_v1.17.0}). So the
 * same jitted function reaches a 0.115 plugin (StableHLO 1.20.0) as a 1.17.0 artifact and a 0.81 plugin
 * (1.13.3) as a 1.13.3 one, and a request recorded with one plugin is not the request the other gets.
 *
 * <p>With R the recorded artifact's version, O the recorded plugin's and N the new plugin's attribute, the
 * framework's own version F satisfies R = min(F, O). When R &lt; O, F = R, and the new plugin gets min(R, N);
 * when R = O, F &ge; R, and the new plugin gets N if N &le; R; otherwise (N &gt; R = O) what it gets is unknown
 * and the program is kept as recorded. A version that changes is written into the producer: for a program whose
 * operations are the same at both versions that is exactly what the framework sends (checked with JAX 0.10.2's
 * MLP sample: all 25 programs, recorded with the 0.115 plugin, equal the 0.81 plugin's bytes after this). Where the
 * downgrade would also rewrite operations, the bytes differ from the framework's: a miss at run time, never a
 * wrong executable (the key covers the program bytes, and the executable is compiled from exactly those).
 */
public final class StablehloTarget {
  private static final byte[] MAGIC = {'M', 'L', (byte) 0xef, 'R'};
  private static final String PRODUCER = "StableHLO_v";
  private static final String ATTRIBUTE = "attribute=stablehlo_current_version=l:";

  private StablehloTarget() {}

  /** The program the framework sends to the new plugin, or {@code program} itself when it is the same or unknown. */
  public static byte[] forPlugin(String format, byte[] program, String recordedIdentity, String newIdentity) {
    if (!format.equals("mlir")) {
      return program;
    }
    Optional<Header> header = Header.of(program);
    Optional<int[]> old = pluginVersion(recordedIdentity);
    Optional<int[]> now = pluginVersion(newIdentity);
    if (header.isEmpty() || old.isEmpty() || now.isEmpty()) {
      return program;
    }
    int[] r = header.get().version;
    int[] target;
    if (compare(r, old.get()) < 0) {
      target = min(r, now.get());
    } else if (compare(now.get(), r) <= 0) {
      target = now.get();
    } else {
      return program; // the framework's own version is unknown: it may send anything from r to the new version
    }
    return compare(target, r) == 0 ? program : header.get().withVersion(program, target);
  }

  /** The plugin's {@code stablehlo_current_version} from an identity text. */
  static Optional<int[]> pluginVersion(String identityText) {
    for (String line : identityText.split("\n")) {
      if (line.startsWith(ATTRIBUTE)) {
        return parse(line.substring(ATTRIBUTE.length()), ",");
      }
    }
    return Optional.empty();
  }

  private static Optional<int[]> parse(String text, String separator) {
    String[] parts = text.split(separator, -1);
    if (parts.length != 3) {
      return Optional.empty();
    }
    int[] v = new int[3];
    for (int i = 0; i < 3; i++) {
      if (!parts[i].matches("[0-9]{1,6}")) {
        return Optional.empty();
      }
      v[i] = Integer.parseInt(parts[i]);
    }
    return Optional.of(v);
  }

  private static int compare(int[] a, int[] b) {
    return Arrays.compare(a, b);
  }

  private static int[] min(int[] a, int[] b) {
    return compare(a, b) <= 0 ? a : b;
  }

  /** Where the producer's version text lies in an artifact. */
  private record Header(int start, int end, int[] version) {
    static Optional<Header> of(byte[] p) {
      if (p.length < MAGIC.length + 1 || !Arrays.equals(p, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
        return Optional.empty();
      }
      int i = MAGIC.length;
      while (i < p.length && (p[i] & 0x80) != 0) { // the bytecode version, a varint
        i++;
      }
      i++;
      int nul = i;
      while (nul < p.length && p[nul] != 0) {
        nul++;
      }
      if (nul >= p.length) {
        return Optional.empty();
      }
      String producer = new String(p, i, nul - i, StandardCharsets.US_ASCII);
      if (!producer.startsWith(PRODUCER)) {
        return Optional.empty();
      }
      int start = i + PRODUCER.length();
      int end = nul;
      return parse(producer.substring(PRODUCER.length()), "\\.").map(v -> new Header(start, end, v));
    }

    byte[] withVersion(byte[] program, int[] v) {
      byte[] text = (v[0] + "." + v[1] + "." + v[2]).getBytes(StandardCharsets.US_ASCII);
      byte[] out = new byte[program.length - (end - start) + text.length];
      System.arraycopy(program, 0, out, 0, start);
      System.arraycopy(text, 0, out, start, text.length);
      System.arraycopy(program, end, out, start + text.length, program.length - end);
      return out;
    }
  }
}
