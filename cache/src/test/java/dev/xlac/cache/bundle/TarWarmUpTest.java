package dev.xlac.cache.bundle;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.Test;

class TarWarmUpTest {
  /** The class the warm-up names is the one a tar entry's times use: a renamed class would warm up nothing. */
  @Test
  void warmsUpTheClassThatTarEntriesKeepTheirTimesWith() throws Exception {
    Class<?> named = Class.forName(TarWarmUp.FILE_TIMES, false, TarWarmUpTest.class.getClassLoader());
    assertThat(named.getName()).isEqualTo("org.apache.commons.io.file.attribute.FileTimes");
    TarArchiveEntry entry = new TarArchiveEntry("a");
    entry.setModTime(java.nio.file.attribute.FileTime.fromMillis(1_000));
    assertThat(entry.getLastModifiedTime().toMillis()).isEqualTo(1_000);

    Thread t = TarWarmUp.start();
    t.join(60_000);
    assertThat(t.isAlive()).isFalse();
    assertThat(t.isDaemon()).isTrue();
  }
}
