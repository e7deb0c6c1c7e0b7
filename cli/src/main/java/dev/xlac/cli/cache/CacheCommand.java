package dev.xlac.cli.cache;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.SequencedMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code xlac cache}: the persistent compilation cache. Each subcommand delegates to dev.xlac.cache. */
@Command(name = "cache", mixinStandardHelpOptions = true,
    description = {"The persistent compilation cache: graphs captured from training runs and the artifacts compiled"
        + " from them.",
        "Location: --cache DIR, else $XLAC_CACHE_DIR, else ~/.cache/xlac."},
    footer = "%nOne xlac process writes to a cache at a time; another one that wants to write fails at once with"
        + " a message naming the holder, or waits with --wait[=DURATION]. ls, stat, export, log and verify (without"
        + " --repair) work while another process writes. Details: docs/cache.md.")
public final class CacheCommand implements Runnable {
  /**
   * The subcommands in the order help lists them; each key is the name in the class's {@code @Command}.
   * dev.xlac.cli.CommandTree adds them, all or only the one a run names.
   */
  public static final SequencedMap<String, Class<?>> SUBCOMMANDS;

  static {
    SequencedMap<String, Class<?>> m = new LinkedHashMap<>();
    m.put("add", CacheAddCommand.class);
    m.put("ls", CacheLsCommand.class);
    m.put("stat", CacheStatCommand.class);
    m.put("prune", CachePruneCommand.class);
    m.put("export", CacheExportCommand.class);
    m.put("import", CacheImportCommand.class);
    m.put("verify", CacheVerifyCommand.class);
    m.put("log", CacheLogCommand.class);
    m.put("why", CacheWhyCommand.class);
    m.put("rm", CacheRmCommand.class);
    m.put("clear", CacheClearCommand.class);
    m.put("config", CacheConfigCommand.class);
    m.put("keygen", CacheKeygenCommand.class);
    m.put("materialize", CacheMaterializeCommand.class);
    m.put("push", CachePushCommand.class);
    m.put("pull", CachePullCommand.class);
    SUBCOMMANDS = Collections.unmodifiableSequencedMap(m);
  }

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
