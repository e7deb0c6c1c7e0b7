package dev.xlac.cache.repair;

import dev.xlac.cache.store.RocksDbStore;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * RocksDB's RepairDB, which rebuilds a MANIFEST from the table files and write-ahead logs it finds
 * in a directory. rocksdbjni does not expose it, but the native library it loads carries RocksDB's
 * C API, whose {@code rocksdb_repair_db} this calls through the FFM API (three functions, looked
 * up once). The options are the C API's defaults: unknown column families are created as the
 * repair finds them in the tables' properties, and values replayed from a write-ahead log are
 * written into tables, never blob files. RepairDB ignores blob files altogether (the caller reads
 * those itself, {@link BlobFiles}) and moves what it cannot use into {@code lost/}.
 */
final class RocksDbRepair {
  private static final MethodHandle OPTIONS_CREATE;
  private static final MethodHandle OPTIONS_DESTROY;
  private static final MethodHandle REPAIR;
  private static final MethodHandle FREE;
  private static final String UNAVAILABLE;

  static {
    RocksDbStore.loadNative();
    MethodHandle create = null;
    MethodHandle destroy = null;
    MethodHandle repair = null;
    MethodHandle free = null;
    String why = null;
    try {
      SymbolLookup lookup = lookup();
      Linker linker = Linker.nativeLinker();
      create = linker.downcallHandle(symbol(lookup, "rocksdb_options_create"), FunctionDescriptor.of(ValueLayout.ADDRESS));
      destroy = linker.downcallHandle(symbol(lookup, "rocksdb_options_destroy"),
          FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
      repair = linker.downcallHandle(symbol(lookup, "rocksdb_repair_db"),
          FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
      free = linker.downcallHandle(symbol(lookup, "rocksdb_free"), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    } catch (RuntimeException | IOException | LinkageError e) {
      why = "RocksDB's repair function cannot be called (" + e.getMessage() + ")";
    }
    OPTIONS_CREATE = create;
    OPTIONS_DESTROY = destroy;
    REPAIR = repair;
    FREE = free;
    UNAVAILABLE = why;
  }

  private RocksDbRepair() {}

  /**
   * The library RocksDB loaded: found through this class loader when RocksDB's loader used it (the
   * usual case), else by its path in this process's memory map (Linux).
   */
  private static SymbolLookup lookup() throws IOException {
    SymbolLookup loader = SymbolLookup.loaderLookup();
    if (loader.find("rocksdb_repair_db").isPresent()) {
      return loader;
    }
    Path maps = Path.of("/proc/self/maps");
    if (Files.isReadable(maps)) {
      Optional<String> lib = Files.readAllLines(maps).stream().filter(l -> l.contains("librocksdbjni") && l.contains("/"))
          .map(l -> l.substring(l.indexOf('/'))).findFirst();
      if (lib.isPresent()) {
        return SymbolLookup.libraryLookup(Path.of(lib.get()), Arena.global());
      }
    }
    throw new IOException("RocksDB's native library is not loaded where xlac can find it");
  }

  private static MemorySegment symbol(SymbolLookup lookup, String name) {
    return lookup.find(name).orElseThrow(() -> new IllegalStateException("no symbol " + name));
  }

  /**
   * Runs RepairDB on the database directory {@code dbDir}, which it changes: run it on a copy.
   *
   * @throws IOException RocksDB's reason when the repair failed
   */
  static void repair(Path dbDir) throws IOException {
    if (UNAVAILABLE != null) {
      throw new IOException(UNAVAILABLE);
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment options = (MemorySegment) OPTIONS_CREATE.invokeExact();
      try {
        MemorySegment error = arena.allocate(ValueLayout.ADDRESS);
        error.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        REPAIR.invokeExact(options, arena.allocateFrom(dbDir.toString()), error);
        MemorySegment message = error.get(ValueLayout.ADDRESS, 0);
        if (!message.equals(MemorySegment.NULL)) {
          String text = message.reinterpret(Integer.MAX_VALUE).getString(0);
          FREE.invokeExact(message);
          throw new IOException(text);
        }
      } finally {
        OPTIONS_DESTROY.invokeExact(options);
      }
    } catch (IOException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IOException("RocksDB's repair failed: " + t.getMessage(), t);
    }
  }
}
