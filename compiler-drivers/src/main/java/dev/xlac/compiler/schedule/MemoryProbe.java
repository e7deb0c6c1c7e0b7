package dev.xlac.compiler.schedule;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/** How much memory the machine can still give: what admission control checks before each job. */
@FunctionalInterface
public interface MemoryProbe {

  long availableBytes();

  /**
   * Linux's {@code MemAvailable} from {@code /proc/meminfo} (free memory plus what the kernel can
   * reclaim, its own estimate of what a new process can use); elsewhere the JVM's view of free
   * physical memory.
   */
  static MemoryProbe system() {
    Path meminfo = Path.of("/proc/meminfo");
    if (Files.isReadable(meminfo)) {
      return () -> {
        try {
          for (String line : Files.readAllLines(meminfo)) {
            if (line.startsWith("MemAvailable:")) {
              String[] f = line.substring("MemAvailable:".length()).strip().split("\\s+");
              return Long.parseLong(f[0]) * 1024; // the kernel writes kB, meaning KiB
            }
          }
        } catch (IOException | RuntimeException e) {
          // fall through to the JVM's figure
        }
        return jvmFreeMemory();
      };
    }
    return MemoryProbe::jvmFreeMemory;
  }

  private static long jvmFreeMemory() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getFreeMemorySize();
    }
    return Long.MAX_VALUE;
  }
}
