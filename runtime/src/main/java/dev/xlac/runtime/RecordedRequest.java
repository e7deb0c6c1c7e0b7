package dev.xlac.runtime;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * One record of the spool (runtime/README.md "The record spool"): what the proxy recorded for one compile, the
 * request's sections as received and the executable the real plugin compiled for it.
 *
 * @param key the request key, recomputed from the sections when the record was read
 * @param format the PJRT_Program format bytes ({@code mlir}, {@code hlo})
 * @param program the PJRT_Program code bytes
 * @param options the serialized CompileOptionsProto as received (not canonical)
 * @param identityText the plugin identity text
 * @param executable {@code PJRT_Executable_Serialize}'s bytes
 * @param compileNanos how long the real compile took
 */
public record RecordedRequest(RequestKey key, byte[] format, byte[] program, byte[] options,
    String identityText, byte[] executable, long compileNanos) {

  /** The {@code plugin_sha256=} line of the identity text, or "" when it has none. */
  public String pluginSha256() {
    return identityField(identityText, "plugin_sha256").orElse("");
  }

  /** The {@code platform_name=} line of the identity text, or "" when it has none. */
  public String platformName() {
    return identityField(identityText, "platform_name").orElse("");
  }

  /** The format as text ({@code mlir}, {@code hlo}). */
  public String formatName() {
    return new String(format, StandardCharsets.UTF_8);
  }

  /** The value of the first {@code name=} line of an identity text. */
  public static Optional<String> identityField(String identityText, String name) {
    if (identityText == null) {
      return Optional.empty();
    }
    String prefix = name + "=";
    for (String line : identityText.split("\n", -1)) {
      if (line.startsWith(prefix)) {
        return Optional.of(line.substring(prefix.length()));
      }
    }
    return Optional.empty();
  }
}
