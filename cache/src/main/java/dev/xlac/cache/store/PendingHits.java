package dev.xlac.cache.store;

import dev.xlac.cache.store.Records.RequestRecord;
import dev.xlac.core.XlacException;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The runtime hits that {@code xlac-fast-start} could not record itself (runtime/README.md, "The fast start"): one
 * small record per run in {@code CACHE/runtime/pending-hits/*.hits}, which the next writer's open counts as
 * {@link RequestEntries#recordHits} would have (per request: hits and last access, the record's {@code at}; the
 * runtime counters), exactly once: the commit that counts a batch of records also names them in the meta record
 * {@link #COUNTED_KEY}, and their files are deleted after it. A file that the next ingest finds named there was
 * counted by a process that died before deleting it: it is deleted without counting.
 *
 * <p>Only the cache's own private files are read: the directory must be a real directory of this user that its group
 * and others cannot write, and each record a regular file of this user that they cannot write, at most
 * {@link #MAX_FILE_BYTES}, looked at without following links before it is opened. Anything else, and a record that is
 * not exactly the format (cache/README.md, "Runtime-hit records"), is removed with one notice. None of this ever fails
 * the open: a commit that fails (a full disk) leaves the records for the next open.
 */
public final class PendingHits {
  /** Where the records are, under the cache directory. */
  public static final String DIRECTORY = "runtime/pending-hits";
  static final String SUFFIX = ".hits";
  static final String MAGIC = "xlac-pending-hits 1";
  static final long MAX_FILE_BYTES = 8L << 20;
  static final int MAX_KEYS = 65536;
  /** A commit counts at most this many records... */
  static final int BATCH_RECORDS = 1000;
  /** ... or this many bytes of them, so that a batch's hits (at most one key per 80 bytes) stay small in memory. */
  static final long BATCH_BYTES = 16L << 20;
  /** A file that is not a record and older than this was left by a writer that died. */
  static final Duration STALE_TEMPORARY = Duration.ofHours(1);
  /** Meta record: the names of records counted whose files may still exist, one per line. */
  public static final byte[] COUNTED_KEY = "runtime_hits/counted".getBytes(StandardCharsets.US_ASCII);
  private static final int S_IFMT = 0170000;
  private static final int S_IFREG = 0100000;
  private static final int S_IFDIR = 0040000;
  private static final int S_IFLNK = 0120000;
  private static final int GROUP_OR_OTHERS_WRITE = 0022;
  private static final String ATTRIBUTES = "unix:mode,uid,size,lastModifiedTime";

  /** Test hook: told "commit" inside each counting batch and "counted" after it, before the files are deleted. */
  static volatile Consumer<String> stepsForTests = step -> { };

  private PendingHits() {}

  /** One run's record: when it ended, the compile time its hits saved, and its hits per request key. */
  record Run(long at, long savedNanos, Map<RequestKey, Long> hits, long textBytes) {}

  /** A record that is not one, and why, in words. */
  static final class Damaged extends Exception {
    private static final long serialVersionUID = 1L;

    Damaged(String reason) {
      super(reason, null, false, false);
    }
  }

  /** Counts every record under {@code store}'s directory (see the class comment); never throws. */
  public static void ingest(Store store) {
    try {
      new Ingest(store).run();
    } catch (RuntimeException e) {
      store.notice("cache " + store.dir + ": cannot count the runtime hits of runs that ended with no xlac process"
          + " after them: " + XlacException.reason(e) + "; they are counted at the next open");
    }
  }

  /**
   * How many runs' records wait to be counted (for {@code cache stat}): the {@code *.hits} names in the directory
   * that the last counting commit does not name. Reads only: nothing is checked, counted or removed.
   */
  public static long waiting(Store store) {
    Path dir = store.dir.resolve(DIRECTORY);
    long n = 0;
    try {
      Map<String, Object> a = attributes(dir);
      if (a == null || type(a) != S_IFDIR) {
        return 0;
      }
      Set<String> counted = counted(store);
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
        for (Path p : entries) {
          String name = p.getFileName().toString();
          if (isRecordName(name) && !counted.contains(name)) {
            n++;
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // cannot be listed (by this user): what was seen
    }
    return n;
  }

  /** The records one commit counts, added up as they are read. */
  private static final class Batch {
    final List<Path> files = new ArrayList<>();
    final Map<RequestKey, long[]> byKey = new HashMap<>(); // count, latest end
    long hits;
    long savedMillis;
    long textBytes;

    void add(Path file, Run r) {
      files.add(file);
      textBytes += r.textBytes();
      for (Map.Entry<RequestKey, Long> e : r.hits().entrySet()) {
        long[] c = byKey.computeIfAbsent(e.getKey(), k -> new long[2]);
        c[0] = saturatedSum(c[0], e.getValue());
        c[1] = Math.max(c[1], r.at());
        hits = saturatedSum(hits, e.getValue());
      }
      savedMillis = saturatedSum(savedMillis, r.savedNanos() / 1_000_000);
    }
  }

  private static final class Ingest {
    private final Store store;
    private final Path dir;
    /** Names of records counted whose files were not deleted yet: every counting commit names them again. */
    private final Set<String> carried = new TreeSet<>();

    Ingest(Store store) {
      this.store = store;
      this.dir = store.dir.resolve(DIRECTORY);
    }

    void run() {
      Map<String, Object> a = attributes(dir);
      if (a == null) {
        return; // no run left hits to count: the one stat of the usual case
      }
      String untrusted = untrustedDirectory(a);
      if (untrusted != null) {
        store.notice("cache " + store.dir + ": " + DIRECTORY + " " + untrusted + "; the runtime hits recorded there"
            + " are not counted");
        return;
      }
      List<String> records = list();
      if (records.isEmpty()) {
        return;
      }
      Set<String> counted = counted(store);
      Batch batch = new Batch();
      boolean deleted = false;
      for (String name : records) {
        Path f = dir.resolve(name);
        if (!isSafeName(name)) {
          boolean gone = delete(f);
          store.notice("cache " + store.dir + ": dropped the runtime-hit record " + DIRECTORY + "/"
              + printable(name) + ": its name is not one a record has (those hits are not counted"
              + (gone ? ")" : "; it cannot be removed)"));
          deleted = true;
          continue;
        }
        if (counted.contains(name)) {
          if (!delete(f)) {
            carried.add(name);
          }
          deleted = true;
          unsynced = true;
          continue;
        }
        Run run;
        try {
          run = read(f);
        } catch (NoSuchFileException e) {
          continue;
        } catch (Damaged e) {
          boolean gone = delete(f);
          store.notice("cache " + store.dir + ": dropped the runtime-hit record " + DIRECTORY + "/" + name + ": "
              + e.getMessage() + " (those hits are not counted" + (gone ? ")" : "; it cannot be removed)"));
          deleted = true;
          continue;
        } catch (IOException e) {
          store.notice("cache " + store.dir + ": cannot read the runtime-hit record " + DIRECTORY + "/" + name + ": "
              + XlacException.reason(e) + "; it stays, to be counted at the next open");
          continue;
        }
        batch.add(f, run);
        if (batch.files.size() >= BATCH_RECORDS || batch.textBytes >= BATCH_BYTES) {
          if (!count(batch)) {
            return;
          }
          deleted = true;
          batch = new Batch();
        }
      }
      if (!batch.files.isEmpty() && count(batch)) {
        deleted = true;
      }
      if (deleted) {
        syncDirectory();
      }
    }

    /** The names of finished records, sorted; removes what writers that died left (older than an hour). */
    private List<String> list() {
      List<String> records = new ArrayList<>();
      long cutoff = System.currentTimeMillis() - STALE_TEMPORARY.toMillis(); // against the file system's times
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
        for (Path p : entries) {
          String name = p.getFileName().toString();
          if (isRecordName(name)) {
            records.add(name);
            continue;
          }
          Map<String, Object> a = attributes(p);
          if (a != null && type(a) != S_IFDIR && ((FileTime) a.get("lastModifiedTime")).toMillis() < cutoff) {
            delete(p);
          }
        }
      } catch (IOException e) {
        store.notice("cache " + store.dir + ": cannot list " + DIRECTORY + ": " + XlacException.reason(e)
            + "; the runtime hits recorded there are counted at the next open");
        return List.of();
      }
      records.sort(null);
      return records;
    }

    /**
     * Counts one batch in one fsynced commit that also names its records ({@link #COUNTED_KEY}), then deletes their
     * files. False when the commit failed: the records stay for the next open, and this ingest stops.
     */
    private boolean count(Batch batch) {
      // The names this commit drops from the counted list (an earlier batch's, those found counted) belong to files
      // deleted since: their removal must be durable before the list forgets them, or a crash brings back a file no
      // list names, and it is counted again.
      if (unsynced) {
        syncDirectory();
      }
      List<Path> files = batch.files;
      Set<String> names = new LinkedHashSet<>(carried);
      files.forEach(f -> names.add(f.getFileName().toString()));
      try {
        store.commit(true, txn -> {
          stepsForTests.accept("commit");
          for (Map.Entry<RequestKey, long[]> e : batch.byKey.entrySet()) {
            byte[] digest = e.getKey().digest();
            RequestRecord r = txn.request(digest);
            if (r != null) {
              txn.writeRequest(digest, r.withHits(e.getValue()[0], e.getValue()[1]), null, null);
            }
          }
          txn.countRuntimeHits(batch.hits, batch.savedMillis);
          txn.putMeta(COUNTED_KEY, String.join("\n", names).getBytes(StandardCharsets.UTF_8));
          return null;
        });
      } catch (RuntimeException e) {
        store.notice("cache " + store.dir + ": cannot count the runtime hits of " + files.size()
            + (files.size() == 1 ? " run" : " runs") + " now: "
            + XlacException.reason(e) + "; their records stay in " + DIRECTORY + ", to be counted at the next open");
        return false;
      }
      stepsForTests.accept("counted");
      for (Path f : files) {
        if (!delete(f)) {
          carried.add(f.getFileName().toString());
        }
      }
      unsynced = true;
      return true;
    }

    /** Why the directory cannot be trusted (a link, not a directory, another user's, others can write it), or null. */
    private String untrustedDirectory(Map<String, Object> a) {
      int mode = (Integer) a.get("mode");
      if (type(a) == S_IFLNK) {
        return "is a symbolic link, not followed (remove it)";
      }
      if (type(a) != S_IFDIR) {
        return "is not a directory (remove it)";
      }
      int uid = (Integer) a.get("uid");
      if (uid != Uid.SELF) {
        return "belongs to another user (uid " + uid + ")";
      }
      if ((mode & GROUP_OR_OTHERS_WRITE) != 0) {
        return "is not private: its group or others can write it (" + permissions(mode)
            + "; run 'xlac cache verify --repair')";
      }
      return null;
    }

    /** Deletes a file; true when it is gone. */
    private static boolean delete(Path f) {
      try {
        Files.deleteIfExists(f);
        return true;
      } catch (IOException e) {
        return false;
      }
    }

    /** Whether files were deleted since the directory was last synced. */
    private boolean unsynced;

    private void syncDirectory() {
      stepsForTests.accept("sync");
      unsynced = false;
      try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
        ch.force(true);
      } catch (IOException e) {
        // the deletions stay in the page cache; a crash brings back files the meta record names, counted already
      }
    }
  }

  /**
   * Reads and checks one record: a regular file of this user that its group and others cannot write, at most
   * {@link #MAX_FILE_BYTES}, looked at without following a link before it is opened without following one.
   */
  static Run read(Path f) throws IOException, Damaged {
    Map<String, Object> a = attributes(f);
    if (a == null) {
      throw new NoSuchFileException(f.toString());
    }
    int mode = (Integer) a.get("mode");
    if (type(a) == S_IFLNK) {
      throw new Damaged("a symbolic link, not a record");
    }
    if (type(a) != S_IFREG) {
      throw new Damaged("not a regular file");
    }
    int uid = (Integer) a.get("uid");
    if (uid != Uid.SELF) {
      throw new Damaged("it belongs to another user (uid " + uid + ")");
    }
    if ((mode & GROUP_OR_OTHERS_WRITE) != 0) {
      throw new Damaged("its group or others can write it (" + permissions(mode) + ")");
    }
    long size = (Long) a.get("size");
    if (size > MAX_FILE_BYTES) {
      throw new Damaged("larger than a record can be (" + size + " bytes, at most " + MAX_FILE_BYTES + ")");
    }
    // The directory is private (checked before), so nobody else can put a FIFO in the file's place meanwhile.
    byte[] bytes;
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      ByteBuffer buf = ByteBuffer.allocate((int) size + 1);
      while (buf.hasRemaining() && ch.read(buf) >= 0) {
        // until the end, or one byte past the size it had
      }
      if (buf.position() != size) {
        throw new Damaged("it changed while it was read, which a finished record never does");
      }
      bytes = Arrays.copyOf(buf.array(), buf.position());
    }
    return parse(bytes);
  }

  /** Parses a record's text (the format in cache/README.md, "Runtime-hit records"). */
  static Run parse(byte[] bytes) throws Damaged {
    for (byte b : bytes) {
      if (b < 0) {
        throw new Damaged("it holds a byte that no record has (" + (b & 0xff) + ")");
      }
    }
    String text = new String(bytes, StandardCharsets.US_ASCII);
    if (!text.endsWith("\nend\n")) {
      throw new Damaged(text.contains("\nend\n") ? "text follows its 'end' line" : "cut short: it has no 'end' line");
    }
    String[] lines = text.substring(0, text.length() - "\nend\n".length()).split("\n", -1);
    if (!lines[0].equals(MAGIC)) {
      throw new Damaged("its first line is not '" + MAGIC + "'");
    }
    if (lines.length < 3) {
      throw new Damaged("it lacks its 'at' or 'saved_ns' line");
    }
    long at = number(lines[1], "at ", 2);
    long saved = number(lines[2], "saved_ns ", 3);
    if (lines.length - 3 > MAX_KEYS) {
      throw new Damaged("more than " + MAX_KEYS + " request keys");
    }
    Map<RequestKey, Long> hits = new LinkedHashMap<>();
    long sum = 0;
    for (int i = 3; i < lines.length; i++) {
      String l = lines[i];
      int space = l.lastIndexOf(' ');
      if (!l.startsWith("hit " + RequestKey.VERSION + ":") || space != 4 + RequestKey.VERSION.length() + 1 + 64) {
        throw new Damaged(lineNumber(i) + " is not 'hit " + RequestKey.VERSION + ":<64 hex digits> <count>'"
            + (l.equals("end") ? " ('end' comes more than once)" : ""));
      }
      String keyText = l.substring(4, space);
      if (!isLowerHex(keyText, RequestKey.VERSION.length() + 1)) {
        throw new Damaged(lineNumber(i) + ": its key is not 64 lowercase hex digits");
      }
      long n = number(l, l.substring(0, space + 1), i + 1);
      if (n < 1) {
        throw new Damaged(lineNumber(i) + ": a count of 0");
      }
      if (hits.put(RequestKey.parse(keyText), n) != null) {
        throw new Damaged(lineNumber(i) + ": key " + keyText + " comes twice");
      }
      try {
        sum = Math.addExact(sum, n);
      } catch (ArithmeticException e) {
        throw new Damaged("its counts add up past the largest number");
      }
    }
    return new Run(at, saved, hits, bytes.length);
  }

  /** Counters stop at the largest long rather than wrap. */
  private static long saturatedSum(long a, long b) {
    long s = a + b;
    return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
  }

  private static String lineNumber(int index) {
    return "line " + (index + 1);
  }

  /** The decimal after {@code prefix}: digits only, at most 18 of them (no sign, no spaces). */
  private static long number(String line, String prefix, int lineNumber) throws Damaged {
    if (!line.startsWith(prefix)) {
      throw new Damaged("line " + lineNumber + " does not start with '" + prefix.strip() + "'");
    }
    String digits = line.substring(prefix.length());
    if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new Damaged("line " + lineNumber + ": '" + shortened(digits) + "' is not a number");
    }
    return Long.parseLong(digits);
  }

  private static String shortened(String s) {
    return s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }

  private static boolean isLowerHex(String s, int from) {
    for (int i = from; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        return false;
      }
    }
    return true;
  }

  private static boolean isRecordName(String name) {
    return name.endsWith(SUFFIX) && !name.startsWith(".");
  }

  /** Record names are the writer's host, pid, time and letters: nothing that could break the list of counted names. */
  private static boolean isSafeName(String name) {
    return name.length() <= 255 && name.chars().allMatch(c -> c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
        || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_');
  }

  private static String printable(String name) {
    StringBuilder b = new StringBuilder();
    name.codePoints().forEach(c -> b.append(c < 0x20 || c == 0x7f ? "?" : Character.toString(c)));
    return b.toString();
  }

  /** The names the last counting commit recorded ({@link #COUNTED_KEY}); none when it holds none. */
  private static Set<String> counted(Store store) {
    byte[] v = store.meta(COUNTED_KEY);
    Set<String> names = new TreeSet<>();
    if (v != null) {
      for (String n : new String(v, StandardCharsets.UTF_8).split("\n")) {
        if (!n.isEmpty()) {
          names.add(n);
        }
      }
    }
    return names;
  }

  /** The file's mode, owner, size and time, its link not followed; null when it does not exist. */
  private static Map<String, Object> attributes(Path p) {
    try {
      return Files.readAttributes(p, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      throw new XlacException(dev.xlac.core.ExitCode.ENVIRONMENT, "cannot look at " + p + ": "
          + XlacException.reason(e), e);
    }
  }

  private static int type(Map<String, Object> a) {
    return (Integer) a.get("mode") & S_IFMT;
  }

  /** {@code rwxr-xr-x} of a mode's permission bits. */
  private static String permissions(int mode) {
    PosixFilePermission[] all = PosixFilePermission.values(); // OWNER_READ .. OTHERS_EXECUTE: bits 8 down to 0
    Set<PosixFilePermission> s = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < all.length; i++) {
      if ((mode & (1 << (8 - i))) != 0) {
        s.add(all[i]);
      }
    }
    return PosixFilePermissions.toString(s);
  }

  /** This process's user id, as the kernel reports it for {@code /proc/self}. */
  private static final class Uid {
    static final int SELF = self();

    private static int self() {
      try {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
      } catch (IOException | RuntimeException e) {
        return -1; // no record is this user's: none is read
      }
    }
  }
}
