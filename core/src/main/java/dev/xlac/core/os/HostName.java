package dev.xlac.core.os;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** This host's name as the kernel has it ({@code /proc/sys/kernel/hostname}): no name lookup, which may fail or hang. */
public final class HostName {
  private HostName() {}

  /** The name, stripped (possibly empty); empty when the kernel's file cannot be read. */
  public static Optional<String> kernel() {
    try {
      return Optional.of(Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).strip());
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }
}
