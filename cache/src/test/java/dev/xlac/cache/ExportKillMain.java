package dev.xlac.cache;

import java.nio.file.Path;
import java.time.Duration;

/** A real exporting process for {@link ExportTemporariesTest}, which kills it with SIGKILL while it writes: {@code DIR FILE}. */
public final class ExportKillMain {
  private ExportKillMain() {}

  public static void main(String[] args) throws Exception {
    try (CacheStore s = CacheStore.open(Path.of(args[0]), CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
      System.out.println("started");
      s.exportBundle(Path.of(args[1]), new ExportRequest(null, null));
      System.out.println("done");
    }
  }
}
