package dev.xlac.pipeline.run;

import dev.xlac.capture.CommandRunner;
import dev.xlac.capture.ProxyEnvironment;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.pipeline.recording.StatsDirectories;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * {@code xlac run}'s native fast start ({@code runtime/README.md}, "The fast start"): the launch plan this JVM
 * writes for the next identical invocation, and the finish of a command the fast start ran ("adopted").
 *
 * <p>A plan is written at the end of a run after which the next run with the same options, in the same directory,
 * would have no work before its command starts: the stamp says the layout is current for the cache as it is now,
 * the cache's own layout is served (no {@code --layout}), nothing is recorded, no remote tier is configured, and
 * nothing was said to the user before the command. It holds every condition that decision rested on (options,
 * directory, the watched environment, the plugin, its memo, the proxy library, the jar, the stamp, the database
 * files) and the environment change the command gets; {@code xlac-fast-start} re-checks them all, and runs the JVM
 * as before on any difference. A run that cannot write a plan removes the old one.
 */
public final class FastStart {
  private FastStart() {}

  /** The system property the launcher sets to the plans' directory (none: no plans). */
  public static final String PLANS_PROPERTY = "xlac.run.plans";
  static final String FORMAT = "xlac-run-plan 2";
  static final String STATS_PREFIX = StatsDirectories.PREFIX;

  /**
   * The environment variables a plan watches: every name the run's set-up reads or changes is among them (the
   * plugin, torch_xla's and JAX's variables, the locale, the cache and runtime-library directories, the JVM's
   * options). {@code XLAC_FAST_START_DEBUG} (the fast start's own trace) is not watched.
   */
  static final List<String> WATCH_PREFIXES = List.of("XLAC_", "JAX_", "PJRT_", "XLA_", "TPU_", "NEURON_", "LIBTPU_",
      "XPU_", "LC_", "JAVA_", "JDK_", "_JAVA_");
  static final List<String> WATCH_SUFFIXES = List.of("_LIBRARY_PATH");
  static final List<String> WATCH_NAMES = List.of("TMPDIR", "HOME", "XDG_CACHE_HOME", "LANG", "LANGUAGE", "PATH",
      "LD_PRELOAD", "PYTHONPATH");
  static final String DEBUG_VARIABLE = "XLAC_FAST_START_DEBUG";
  private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");
  private static final Set<PosixFilePermission> PRIVATE_FILE = PosixFilePermissions.fromString("rw-------");

  private static boolean debug() {
    String d = System.getenv(DEBUG_VARIABLE);
    return d != null && !d.isEmpty() && !d.equals("0");
  }

  static boolean watched(String name) {
    if (name.equals(DEBUG_VARIABLE)) {
      return false;
    }
    return WATCH_NAMES.contains(name) || WATCH_PREFIXES.stream().anyMatch(name::startsWith)
        || WATCH_SUFFIXES.stream().anyMatch(name::endsWith);
  }

  /**
   * Which plan a run writes: {@code planDir/<sha256 of cwd and the options>.plan}.
   *
   * @param options the words between {@code run} and {@code --}, as given
   * @param report {@code --report FILE}, or null (its directory must stay writable)
   */
  public record Key(Path planDir, Path cwd, List<String> options, Path report) {
    public Key {
      options = List.copyOf(options);
    }

    /** The key of this process's run, when the launcher named a plans directory. */
    public static Optional<Key> of(List<String> options, Path report) {
      String dir = System.getProperty(PLANS_PROPERTY);
      if (dir == null || dir.isEmpty()) {
        return Optional.empty();
      }
      return Optional.of(new Key(Path.of(dir), Path.of(System.getProperty("user.dir")), options, report));
    }

    Path file() {
      try {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        sha.update(bytes(cwd.toString()));
        sha.update((byte) 0);
        for (String o : options) {
          sha.update(bytes(o));
          sha.update((byte) 0);
        }
        return planDir.resolve(HexFormat.of().formatHex(sha.digest()) + ".plan");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /**
   * A command the fast start ran; the JVM finishes its run ({@code -Dxlac.run.adopted.*}).
   *
   * @param signal the last signal forwarded to the command ({@code INT}, {@code TERM}, {@code HUP}), or null
   * @param plugin the plugin the plan was made for, as the command got it ({@link RealPlugin#proxyValue()})
   * @param db the database directory of the cache the plan's conditions named
   */
  public record Adopted(Path stats, int exitStatus, Duration wall, String signal, String plugin, Path db) {
    /** The command this process's fast start ran, if it ran one. */
    public static Optional<Adopted> fromProperties() {
      String stats = System.getProperty("xlac.run.adopted.stats");
      if (stats == null) {
        return Optional.empty();
      }
      String signal = System.getProperty("xlac.run.adopted.signal", "");
      String db = System.getProperty("xlac.run.adopted.db", "");
      return Optional.of(new Adopted(Path.of(stats), Integer.parseInt(System.getProperty("xlac.run.adopted.exit")),
          Duration.ofNanos(Long.parseLong(System.getProperty("xlac.run.adopted.wall"))),
          signal.isEmpty() ? null : signal, System.getProperty("xlac.run.adopted.plugin", ""),
          db.isEmpty() ? null : Path.of(db)));
    }

    CommandRunner.Outcome outcome() {
      return new CommandRunner.Outcome(exitStatus, signal, List.of());
    }
  }

  /** Writes (or removes) the plan of one run; also notes whether the run said anything before its command. */
  static final class Writer {
    private final Key key;
    private final Supplier<Path> proxy;
    private boolean noticed;

    Writer(Key key, Supplier<Path> proxy) {
      this.key = key;
      this.proxy = proxy;
    }

    /** {@code notices}, noting that there was one: a run that said something gets no plan. */
    Consumer<String> watch(Consumer<String> notices) {
      return m -> {
        noticed = true;
        notices.accept(m);
      };
    }

    /**
     * At the end of a run: the plan for the next identical one when {@code eligible} (the stamp was just written,
     * the cache has no remote tier, no {@code --layout}, no {@code --record}) and the run said nothing; else the
     * old plan removed. Never fails the run.
     */
    void afterRun(RunSpec spec, RealPlugin plugin, boolean eligible) {
      Path file = key.file();
      try {
        whyNot = !eligible ? "the run had work before its command, a recording, a remote tier or --layout"
            : noticed ? "the run said something before its command" : null;
        Optional<String> text = whyNot == null ? text(spec, plugin) : Optional.empty();
        if (text.isPresent()) {
          // A plan sets the command's environment: the fast start takes only one of this user's, which only this
          // user can write, in a directory only this user can write to.
          Files.createDirectories(key.planDir(), PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
          Files.setPosixFilePermissions(key.planDir(), PRIVATE_DIR);
          byte[] bytes = text.get().getBytes(StandardCharsets.UTF_8);
          AtomicFiles.write(file, PRIVATE_FILE, out -> {
            out.write(bytes);
            return true;
          });
        } else {
          Files.deleteIfExists(file);
        }
      } catch (IOException | RuntimeException e) {
        whyNot = "cannot write it: " + dev.xlac.core.XlacException.reason(e);
        try {
          Files.deleteIfExists(file);
        } catch (IOException | RuntimeException ignored) {
          // a plan that cannot be removed cannot have been written either
        }
      }
      if (whyNot != null && debug()) { // XLAC_FAST_START_DEBUG: why the next run takes the JVM path again
        System.err.println("xlac run: no launch plan for the next run: " + whyNot);
      }
    }

    /** Why {@link #afterRun} wrote no plan (null when it wrote one). */
    private String whyNot;

    /** Runs between the stamp's check and its read (tests: a writer in between). */
    Runnable beforeStampRead = () -> {};

    private Optional<String> text(RunSpec spec, RealPlugin plugin) throws IOException {
      Path cacheDir = spec.cacheDir().toAbsolutePath().normalize();
      Path layout = RuntimeCache.layoutDir(spec.cacheDir());
      Path placeholder = Path.of("/", "xlac-fast-start-stats-placeholder");
      ProxyEnvironment env = ProxyEnvironment.of(CommandRunner.userEnvironment(spec.env()),
          new ProxyEnvironment.Settings(proxy.get(), plugin.path(), plugin.proxyValue(), layout, placeholder, null));
      if (!env.notes().isEmpty()) {
        whyNot = "the command's environment got a note";
        return Optional.empty();
      }
      StringBuilder b = new StringBuilder(FORMAT).append('\n');
      b.append("cwd ").append(hex(key.cwd().toString())).append('\n');
      // The cache's default comes from user.home (the password entry's home of this uid), not only from $HOME.
      b.append("uid ").append(hex(String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid")))).append('\n');
      b.append("home ").append(hex(System.getProperty("user.home"))).append('\n');
      key.options().forEach(o -> b.append("opt ").append(hex(o)).append('\n'));
      WATCH_PREFIXES.forEach(w -> b.append("watch ").append(hex("prefix")).append(' ').append(hex(w)).append('\n'));
      WATCH_SUFFIXES.forEach(w -> b.append("watch ").append(hex("suffix")).append(' ').append(hex(w)).append('\n'));
      WATCH_NAMES.forEach(w -> b.append("watch ").append(hex("name")).append(' ').append(hex(w)).append('\n'));
      b.append("watch ").append(hex("except")).append(' ').append(hex(DEBUG_VARIABLE)).append('\n');
      new TreeMap<>(spec.env()).forEach((k, v) -> {
        if (watched(k)) {
          b.append("env ").append(hex(k)).append(' ').append(hex(v)).append('\n');
        }
      });
      // The plugin as given (a link may be pointed elsewhere), the file it resolves to, and that file's stat.
      b.append("realpath ").append(hex(ServedCommand.pluginPath(spec.plugin(), spec.env()).toString())).append(' ')
          .append(hex(plugin.path().toString())).append('\n');
      // The plugin's stat as it was identified (its SHA-256, memo and the command's XLAC_PJRT_PLUGIN_SHA256 are of
      // that file), not as it is now: a plugin replaced during the run fails the plan.
      b.append("file ").append(hex(plugin.path().toAbsolutePath().toString())).append(' ').append(plugin.size())
          .append(' ').append(plugin.mtimeNanos()).append(' ').append(plugin.dev()).append(' ').append(plugin.ino())
          .append('\n');
      file(b, RealPlugin.memoFile(RealPlugin.memoDir(spec.cacheDir()), plugin.path()));
      file(b, proxy.get());
      // The Python hooks, first on the command's PYTHONPATH as ProxyEnvironment put them (a hook changed or gone:
      // no plan); derived from it, not checked and written a second time.
      Path hooks = Path.of(env.variables().get("PYTHONPATH").split(java.io.File.pathSeparator, 2)[0]);
      for (Path hook : dev.xlac.capture.PythonHooks.files(hooks)) {
        file(b, hook);
      }
      for (String jar : System.getProperty("java.class.path", "").split(java.io.File.pathSeparator)) {
        if (!jar.isEmpty()) {
          file(b, Path.of(jar));
        }
      }
      b.append("dir ").append(hex(layout.toAbsolutePath().toString())).append('\n');
      if (key.report() != null) {
        b.append("writable ").append(hex(key.report().toAbsolutePath().getParent().toString())).append('\n');
        b.append("notdir ").append(hex(key.report().toAbsolutePath().toString())).append('\n');
      }
      // The database files, then the stamp checked against them, then the files again: a writer in between
      // gives no plan.
      Map<String, long[]> db = databaseFiles(cacheDir.resolve("db"));
      if (!RuntimeCache.layoutCurrent(spec.cacheDir(), plugin.sha256())) {
        whyNot = "the layout is not current for the cache as it is now";
        return Optional.empty();
      }
      beforeStampRead.run();
      // The text recorded is the text checked: the stamp of this plugin for the database files above.
      String stamp = Files.readString(RuntimeCache.stampFile(spec.cacheDir()), StandardCharsets.UTF_8);
      if (!stamp.equals(RuntimeCache.currentStamp(spec.cacheDir(), plugin.sha256()))
          || !sameFiles(db, databaseFiles(cacheDir.resolve("db")))) {
        whyNot = "the cache changed while the plan was written";
        return Optional.empty();
      }
      b.append("content ").append(hex(RuntimeCache.stampFile(cacheDir).toString())).append(' ').append(hex(stamp))
          .append('\n');
      b.append("db ").append(hex(cacheDir.resolve("db").toString())).append(' ').append(db.size()).append('\n');
      db.forEach((name, a) -> b.append("dbfile ").append(hex(name)).append(' ').append(a[0]).append(' ').append(a[1])
          .append('\n'));
      // The finish without a JVM (fast_finish.c): the options it acts on, where it leaves the hits, and the report's
      // fields as RunResult.toJson gives them.
      List<String> flags = new java.util.ArrayList<>();
      if (key.options().contains("-q") || key.options().contains("--quiet")) {
        flags.add("quiet");
      }
      if (key.options().contains("--require-hits")) {
        flags.add("require-hits");
      }
      b.append("finish ").append(hex(String.join(" ", flags))).append(' ')
          .append(hex(RuntimeCache.pendingHitsDir(cacheDir).toString())).append('\n');
      if (key.report() != null) {
        b.append("report ").append(hex(key.report().toAbsolutePath().toString())).append(' ')
            .append(hex(plugin.path().toString())).append(' ').append(hex(plugin.sha256())).append(' ')
            .append(hex(layout.toString())).append('\n');
      }
      b.append("stats ").append(hex(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath().toString()))
          .append(' ').append(hex(STATS_PREFIX)).append('\n');
      delta(spec.env(), ServedCommand.withPreload(env.variables(), layout, spec.command()), placeholder.toString())
          .forEach(b::append);
      return Optional.of(b.append("end\n").toString());
    }
  }

  /**
   * The change from {@code before} (this process's environment, as the fast start gets it) to {@code after} (the
   * command's), one plan line each, in name order; {@code stats} stands for the run's statistics directory.
   */
  static List<String> delta(Map<String, String> before, Map<String, String> after, String stats) {
    TreeSet<String> names = new TreeSet<>(before.keySet());
    names.addAll(after.keySet());
    return names.stream().<String>mapMulti((name, out) -> {
      String was = before.get(name);
      String now = after.get(name);
      if (now == null && was != null) {
        out.accept("unset " + hex(name) + "\n");
      } else if (now != null && now.equals(stats)) {
        out.accept("set-stats " + hex(name) + "\n");
      } else if (now != null && !now.equals(was)) {
        out.accept("set " + hex(name) + " " + hex(now) + "\n");
      }
    }).toList();
  }

  /** The files of {@code CACHE/db} as the stamp sees them ({@link RuntimeCache#databaseState}): size, mtime. */
  private static Map<String, long[]> databaseFiles(Path db) throws IOException {
    Map<String, long[]> files = new TreeMap<>();
    try (var list = Files.list(db)) {
      for (Path f : list.toList()) {
        String name = f.getFileName().toString();
        if (!name.startsWith("LOG")) {
          var a = Files.readAttributes(f, java.nio.file.attribute.BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
          files.put(name, new long[] {a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS)});
        }
      }
    }
    return files;
  }

  private static boolean sameFiles(Map<String, long[]> a, Map<String, long[]> b) {
    return a.keySet().equals(b.keySet())
        && a.entrySet().stream().allMatch(e -> java.util.Arrays.equals(e.getValue(), b.get(e.getKey())));
  }

  private static void file(StringBuilder b, Path path) throws IOException {
    Path p = path.toAbsolutePath();
    var a = Files.readAttributes(p, "unix:size,lastModifiedTime,dev,ino", LinkOption.NOFOLLOW_LINKS);
    b.append("file ").append(hex(p.toString())).append(' ').append(a.get("size")).append(' ')
        .append(((FileTime) a.get("lastModifiedTime")).to(TimeUnit.NANOSECONDS)).append(' ').append(a.get("dev"))
        .append(' ').append(a.get("ino")).append('\n');
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String hex(String s) {
    return "x" + HexFormat.of().formatHex(bytes(s));
  }
}
