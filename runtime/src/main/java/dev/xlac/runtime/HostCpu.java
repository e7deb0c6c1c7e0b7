package dev.xlac.runtime;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * This machine's host CPU lines of the plugin identity text ({@code host_cpu=}, {@code cpu_features=}; runtime/README.md),
 * read by the proxy library's own C code ({@code XlacPjrt_HostCpuLines}, through FFM): Java cannot run CPUID, and one
 * implementation cannot disagree with itself, so a request keyed here for a CPU plugin has the key the proxy computes
 * on this machine.
 */
final class HostCpu {
  private static String lines;

  private HostCpu() {}

  /**
   * The lines, from the library {@link RuntimeLibrary#path()} names (read once).
   *
   * @throws XlacException (ENVIRONMENT) when the library cannot be loaded
   */
  static synchronized String lines() {
    if (lines == null) {
      lines = read(RuntimeLibrary.path());
    }
    return lines;
  }

  static String read(Path library) {
    try (Arena arena = Arena.ofConfined()) {
      SymbolLookup lookup = SymbolLookup.libraryLookup(library, arena);
      MemorySegment fn = lookup.find("XlacPjrt_HostCpuLines").orElseThrow(() -> XlacException.environment(
          "the PJRT runtime library " + library + " has no XlacPjrt_HostCpuLines; it is not this xlac's"));
      MethodHandle h = Linker.nativeLinker().downcallHandle(fn, FunctionDescriptor.of(ValueLayout.JAVA_LONG,
          ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
      for (long size = 1024; ; size = size * 4) {
        MemorySegment out = arena.allocate(size);
        long n = (long) h.invokeExact(out, size);
        if (n == 0) {
          throw new IllegalStateException("the PJRT runtime library " + library + " gave no host CPU lines");
        }
        if (n < size) {
          return new String(out.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        }
      }
    } catch (IllegalArgumentException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot load the PJRT runtime library " + library + ": "
          + XlacException.reason(e), e);
    } catch (XlacException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
