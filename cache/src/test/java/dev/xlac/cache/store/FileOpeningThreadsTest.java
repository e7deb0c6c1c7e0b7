package dev.xlac.cache.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How many threads an open gives RocksDB to read the table files: one for a small cache. */
class FileOpeningThreadsTest {
  @TempDir
  Path db;

  @Test
  void upToTheLimitOneThread_moreTablesOnePerCore_noDatabaseOne() throws Exception {
    assertThat(RocksDbStore.fileOpeningThreads(db.resolve("none"))).isEqualTo(1);
    for (int i = 0; i < RocksDbStore.TABLE_FILES_ONE_THREAD; i++) {
      Files.createFile(db.resolve(String.format("%06d.sst", i)));
    }
    Files.createFile(db.resolve("000999.blob")); // blob files are read as they are needed, not at the open
    assertThat(RocksDbStore.fileOpeningThreads(db)).isEqualTo(1);
    Files.createFile(db.resolve("001000.sst"));
    assertThat(RocksDbStore.fileOpeningThreads(db))
        .isEqualTo(Math.clamp(Runtime.getRuntime().availableProcessors(), 2, 16));
  }
}
