package dev.xlac.cli.cache;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code xlac cache}: the persistent compilation cache. Each subcommand delegates to dev.xlac.cache. */
@Command(name = "cache", mixinStandardHelpOptions = true,
    description = {"The persistent compilation cache: graphs captured from training runs and the artifacts",
        "compiled from them. Location: --cache DIR, else $XLAC_CACHE_DIR, else ~/.cache/xlac."},
    subcommands = {CacheAddCommand.class, CacheLsCommand.class, CacheStatCommand.class, CachePruneCommand.class,
        CacheExportCommand.class, CacheImportCommand.class, CacheVerifyCommand.class, CacheLogCommand.class,
        CacheRmCommand.class, CacheClearCommand.class, CacheConfigCommand.class, CacheMaterializeCommand.class},
    footer = {"%nOne xlac process writes to a cache at a time; another one that wants to write fails at once",
        "with a message naming the holder, or waits with --wait[=DURATION]. ls, stat, export, log and verify",
        "(without --repair) work while another process writes. Details: docs/cache.md."})
public final class CacheCommand implements Runnable {
  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
