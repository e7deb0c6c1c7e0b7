package dev.xlac.pipeline.recording;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.layout.PjrtRecordSpool;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.os.HostName;
import dev.xlac.runtime.RecordSpool;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Record spools that a recording run left behind when it was killed (kill -9, the OOM killer, a lost node), so
 * that the compiles it recorded are not lost: the next recording run of the same cache ({@code xlac run --record},
 * {@code xlac dump}/{@code parallel-compile} with a plugin) takes them in after its own.
 *
 * <p>A spool is named {@code <kind>-<host>-<pid>-<n>} under {@code CACHE/runtime/spool}. It is an orphan when its
 * host is this host and no process of that pid is alive. A spool of another host (a cache on a shared file
 * system) or of a live pid is never touched, nor is one without a complete record (a spool holding only records
 * an earlier ingest moved aside as damaged was already reported). Writes the killed proxy left half done
 * ({@code .tmp-*}) are deleted with the spool once its records are in.
 */
public final class OrphanedSpools {
  private OrphanedSpools() {}

  private static final Pattern NAME = Pattern.compile("(run|dump)-(.+)-(\\d{1,10})-\\d+");
  private static final String HOST = host();

  /**
   * {@code CACHE/runtime/spool}: the record spools of runs in progress, on the cache's file system, since they hold
   * whole executables.
   */
  public static Path spoolRoot(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("spool");
  }

  /** The name prefix of a new spool of this process: {@code Files.createTempDirectory} appends a number. */
  public static String prefix(String kind) {
    return kind + "-" + HOST + "-" + ProcessHandle.current().pid() + "-";
  }

  /** The orphans under {@code CACHE/runtime/spool}, in name order; none when it cannot be listed. */
  static List<Path> find(Path cacheDir) {
    Path root = spoolRoot(cacheDir);
    List<Path> out = new ArrayList<>();
    if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
      return out;
    }
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root)) {
      for (Path d : dirs) {
        Matcher m = NAME.matcher(d.getFileName().toString());
        if (m.matches() && m.group(2).equals(HOST) && !alive(Long.parseLong(m.group(3)))
            && Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
          out.add(d);
        }
      }
    } catch (IOException | RuntimeException e) {
      return out; // nothing to adopt this time; the next run looks again
    }
    out.sort(null);
    return out;
  }

  /**
   * Takes the orphans' records into {@code store}, deleting each spool whose records all went in. Says what it
   * did on {@code notices}; a record the cache refuses stays, as in any ingest.
   */
  public static RequestIngest adopt(Path cacheDir, CacheStore store, Consumer<String> notices) {
    RequestIngest total = new RequestIngest(0, 0, List.of());
    for (Path spool : find(cacheDir)) {
      try {
        if (RecordSpool.files(spool).isEmpty()) {
          if (RecordSpool.temporaries(spool).size() == countEntries(spool)) {
            FileTrees.deleteTreeQuietly(spool); // only half-done writes (or nothing): no work to keep
          }
          continue;
        }
      } catch (IOException e) {
        continue;
      }
      RequestIngest in = PjrtRecordSpool.ingest(spool, store, notices);
      total = total.plus(in);
      String pid = pidOf(spool);
      if (in.leftInSpool() == 0) {
        FileTrees.deleteTreeQuietly(spool);
        notices.accept("took in " + count(in.added() + in.alreadyPresent()) + " recorded by an earlier run that did"
            + " not finish (process " + pid + ")" + (in.alreadyPresent() > 0 ? ", " + in.alreadyPresent()
            + " of them already in the cache" : ""));
      } else {
        notices.accept(count(in.leftInSpool()) + " recorded by an earlier run that did not finish (process " + pid
            + ") stay in " + spool + " (add them later with xlac cache add " + spool + ")");
      }
    }
    return total;
  }

  private static String count(int n) {
    return n + " compile" + (n == 1 ? "" : "s");
  }

  private static String pidOf(Path spool) {
    Matcher m = NAME.matcher(spool.getFileName().toString());
    return m.matches() ? m.group(3) : "?";
  }

  private static long countEntries(Path dir) throws IOException {
    try (var entries = Files.list(dir)) {
      return entries.count();
    }
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  /** This host's name as the kernel has it, made safe for a file name; "localhost" when it cannot be read. */
  private static String host() {
    String name = HostName.kernel().orElseGet(() -> System.getenv().getOrDefault("HOSTNAME", ""));
    name = name.replaceAll("[^A-Za-z0-9.-]", "_");
    return name.isEmpty() ? "localhost" : name;
  }
}
