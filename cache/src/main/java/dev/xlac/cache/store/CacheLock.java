package dev.xlac.cache.store;

import dev.xlac.cache.Quantities;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.function.Consumer;

/**
 * The single-writer lock of a cache: an OS lock ({@link FileChannel#tryLock()}) on
 * {@code DIR/lock}, held for the life of the writing process and released by the OS when that
 * process dies, even by kill -9, so it can never go stale. The holder writes one line into the
 * file (pid, start time, command) so a second writer can say who holds it.
 */
public final class CacheLock implements AutoCloseable {
  static final String FILE = "lock";
  private static final long POLL_MILLIS = 100;

  private final FileChannel channel;
  private final FileLock lock;

  private CacheLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Takes the lock, waiting up to {@code wait} ({@link Duration#ZERO}: not at all; null: forever).
   * Fails with {@link ExitCode#ENVIRONMENT} and a message naming the holder.
   */
  public static CacheLock acquire(Path dir, Duration wait, Consumer<String> notices) throws InterruptedException {
    Path file = dir.resolve(FILE);
    FileChannel ch;
    try {
      PrivateFiles.createDirectories(dir);
      ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
    } catch (IOException e) {
      throw RocksDbStore.ioFailure(dir, "cannot create the lock file " + file, e);
    }
    long deadline = wait == null ? Long.MAX_VALUE : System.nanoTime() + Math.max(0, wait.toNanos());
    boolean told = false;
    try {
      while (true) {
        FileLock l = tryLock(ch, file);
        if (l != null) {
          writeHolder(ch);
          return new CacheLock(ch, l);
        }
        if (System.nanoTime() >= deadline) {
          String holder = awaitHolder(file);
          throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " is locked by another xlac process (" + holder
              + ")" + (wait == null || wait.isZero() ? "; pass --wait[=DURATION] to wait for it"
                  : "; gave up after waiting " + Quantities.human(wait)));
        }
        if (!told) {
          notices.accept("waiting for cache " + dir + ", locked by " + awaitHolder(file));
          told = true;
        }
        Thread.sleep(POLL_MILLIS);
      }
    } catch (InterruptedException | RuntimeException e) {
      closeQuietly(ch);
      throw e;
    }
  }

  private static FileLock tryLock(FileChannel ch, Path file) {
    try {
      return ch.tryLock();
    } catch (OverlappingFileLockException e) {
      return null; // this JVM already holds it: another store in this process is the writer
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot lock " + file + ": " + XlacException.reason(e), e);
    }
  }

  private static void writeHolder(FileChannel ch) {
    String line = "pid " + ProcessHandle.current().pid() + ", since "
        + Instant.now().truncatedTo(ChronoUnit.SECONDS) + ", " + commandLine() + "\n";
    try {
      ch.truncate(0);
      ch.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)), 0);
      ch.force(false);
    } catch (IOException e) {
      // The lock is held; only the courtesy line for other processes is missing.
    }
  }

  /**
   * The holder's line. A holder writes it just after taking the lock and clears it just before
   * releasing, so an empty line, or one naming a dead process (killed holders cannot clear it),
   * means the new holder has not written yet: look again for a little while.
   */
  static String awaitHolder(Path file) throws InterruptedException {
    long deadline = System.nanoTime() + 500_000_000L;
    String line = readHolder(file);
    while (!namesLiveProcess(line) && System.nanoTime() < deadline) {
      Thread.sleep(20);
      line = readHolder(file);
    }
    return line;
  }

  private static boolean namesLiveProcess(String line) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("^pid (\\d+),").matcher(line);
    return m.find() && ProcessHandle.of(Long.parseLong(m.group(1))).map(ProcessHandle::isAlive).orElse(false);
  }

  static String readHolder(Path file) {
    try {
      String s = Files.readString(file, StandardCharsets.UTF_8).strip();
      return s.isEmpty() ? "holder unknown" : s;
    } catch (IOException | java.io.UncheckedIOException e) {
      return "holder unknown";
    }
  }

  /** This process's command without the JVM's options: {@code xlac cache import b.tar.zst} for the CLI. */
  static String commandLine() {
    ProcessHandle.Info info = ProcessHandle.current().info();
    String[] args = info.arguments().orElse(new String[0]);
    if (args.length == 0) {
      // The JDK gives no arguments for a long command line (a class path of many jars) and cuts the line it gives
      // short; Linux has the whole of it, NUL-separated, so the class and its arguments still name the holder.
      try {
        String[] words = new String(Files.readAllBytes(Path.of("/proc/self/cmdline")), StandardCharsets.UTF_8)
            .split("\0");
        args = words.length > 1 ? java.util.Arrays.copyOfRange(words, 1, words.length) : new String[0];
      } catch (IOException | RuntimeException e) {
        // not Linux: the JDK's line as it is
      }
    }
    java.util.Set<String> withValue = java.util.Set.of("-cp", "-classpath", "--class-path", "-p", "--module-path",
        "--add-modules", "--add-opens", "--add-exports", "--add-reads", "--limit-modules");
    StringBuilder b = new StringBuilder();
    int i = 0;
    while (i < args.length && args[i].startsWith("-") && !args[i].equals("-jar") && !args[i].equals("-m")) {
      i += withValue.contains(args[i]) ? 2 : 1;
    }
    for (; i < args.length; i++) {
      b.append(b.isEmpty() ? "" : " ").append(args[i]);
    }
    String cmd = b.isEmpty() ? info.commandLine().orElse("java") : b.toString();
    if (cmd.startsWith("dev.xlac.cli.Main")) {
      cmd = "xlac" + cmd.substring("dev.xlac.cli.Main".length());
    }
    cmd = cmd.replace('\n', ' ');
    return cmd.length() > 300 ? cmd.substring(0, 300) + "..." : cmd;
  }

  @Override
  public void close() {
    try {
      if (lock.isValid()) {
        channel.truncate(0); // see awaitHolder
        lock.release();
      }
    } catch (IOException e) {
      // closing the channel below releases it too
    }
    closeQuietly(channel);
  }

  private static void closeQuietly(FileChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      // nothing left to do
    }
  }
}
