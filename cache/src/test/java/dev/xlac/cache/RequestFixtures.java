package dev.xlac.cache;

import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;

/** Recorded PJRT compile requests for tests: request {@code n}'s program names {@code n}, its executable is {@link Fixtures#bytes}. */
public final class RequestFixtures {
  public static final String PLUGIN_A = "a1".repeat(32);
  public static final String PLUGIN_B = "b2".repeat(32);

  private RequestFixtures() {}

  public static String identity(String pluginSha) {
    return "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.75\nplugin_sha256=" + pluginSha
        + "\n";
  }

  public static RecordedRequest request(int n, int executableBytes) {
    return request(n, executableBytes, PLUGIN_A);
  }

  public static RecordedRequest request(int n, int executableBytes, String pluginSha) {
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] program = ("module @jit_step_" + n + " { func.func @main() { return } }").getBytes(StandardCharsets.UTF_8);
    byte[] options = {0x1a, 0x04, 0x18, (byte) n, 0x20, 0x01};
    String id = identity(pluginSha);
    RequestKey key = RequestKey.of(format, program, options, id.getBytes(StandardCharsets.UTF_8));
    return new RecordedRequest(key, format, program, options, id, Fixtures.bytes(1000 + n, executableBytes),
        1_000_000_000L + n * 1_000_000L);
  }

  /** The key of {@code r} by the rule of xlac-pjrt-request/1 (the program as passed), as older xlac versions filed it. */
  public static RequestKey version1Key(RecordedRequest r) throws java.security.NoSuchAlgorithmException {
    java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
    sha.update("xlac-pjrt-request/1\0".getBytes(StandardCharsets.US_ASCII));
    for (byte[] part : new byte[][] {r.format(), r.program(), dev.xlac.runtime.CanonicalOptions.canonical(r.options()),
        r.identityText().getBytes(StandardCharsets.UTF_8)}) {
      sha.update(java.nio.ByteBuffer.allocate(8).putLong(part.length).array());
      sha.update(part);
    }
    return new RequestKey(sha.digest());
  }

  /** {@code r} filed under its version 1 key, as a cache of an older xlac holds it. */
  public static RecordedRequest filedByAnOlderXlac(RecordedRequest r) throws java.security.NoSuchAlgorithmException {
    return new RecordedRequest(version1Key(r), r.format(), r.program(), r.options(), r.identityText(), r.executable(),
        r.compileNanos());
  }
}
