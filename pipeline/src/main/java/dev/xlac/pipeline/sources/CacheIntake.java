package dev.xlac.pipeline.sources;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphEntry;
import dev.xlac.cache.PutOutcome;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.layout.PjrtRecordSpool;
import dev.xlac.capture.CaptureListener;
import dev.xlac.capture.CapturedModule;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloReadException;
import dev.xlac.runtime.RecordSpool;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The one way graphs enter the cache from outside: from dump files and directories
 * ({@link #addPaths}, through {@link PathSource}) and from a traced command (this, as its
 * {@link CaptureListener}). Each graph is stored once per fingerprint (the cache deduplicates), and
 * the figures for the summary are kept. As a capture listener it is called on the tracer's watcher
 * thread, one call at a time.
 */
public final class CacheIntake implements CaptureListener {
  private final CacheStore store;
  private final Consumer<String> unreadableLine;
  private final Consumer<CapturedModule> onNewGraph;
  private final Set<GraphFingerprint> unique = new LinkedHashSet<>();
  private final Set<String> processes = new TreeSet<>();
  private final SequencedMap<GraphFingerprint, String> newGraphs = new LinkedHashMap<>();
  private int modules;
  private int added;
  private int unreadable;

  /**
   * @param unreadableLine told each unreadable dump's message, as it happens
   * @param onNewGraph called once per fingerprint, right after its graph is in the cache
   */
  public CacheIntake(CacheStore store, Consumer<String> unreadableLine, Consumer<CapturedModule> onNewGraph) {
    this.store = store;
    this.unreadableLine = unreadableLine;
    this.onNewGraph = onNewGraph;
  }

  /**
   * {@code cache add}: stores the modules in {@code paths} as pending graphs; unreadable files are
   * collected in the result, not fatal.
   */
  public static PathSource.Result addPaths(CacheStore store, List<Path> paths) throws InterruptedException {
    return PathSource.ingest(store, paths);
  }

  /**
   * {@code cache add}: record spools (directories of the runtime proxy's {@code *.xpr} records, from
   * {@code XLAC_PJRT_RECORD} or a recording run whose ingest failed) go into the cache as runtime
   * requests, their files deleted as they are taken; every other path as by {@link #addPaths}.
   *
   * @param graphs the dump paths' result; null when every path was a spool
   * @param requests what the spools gave, summed; null when none was a spool
   */
  public record Added(PathSource.Result graphs, RequestIngest requests) {}

  public static Added add(CacheStore store, List<Path> paths, Consumer<String> problems) throws InterruptedException {
    List<Path> dumps = new java.util.ArrayList<>();
    RequestIngest requests = null;
    for (Path p : paths) {
      if (java.nio.file.Files.isDirectory(p) && RecordSpool.looksLikeSpool(p)) {
        RequestIngest r = PjrtRecordSpool.ingest(p, store, problems);
        requests = requests == null ? r : requests.plus(r);
      } else {
        dumps.add(p);
      }
    }
    return new Added(dumps.isEmpty() ? null : PathSource.ingest(store, dumps), requests);
  }

  @Override
  public void captured(CapturedModule m) {
    modules++;
    processes.add(m.process());
    boolean first = unique.add(m.fingerprint());
    // Every MODULE name is kept, also for a graph seen before under other flags or another version,
    // so `cache materialize --layout neuron` writes the entries where the Neuron runtime looks.
    Optional<NeuronName> name = m.neuron().filter(n -> !n.compilerDir().isEmpty())
        .map(n -> new NeuronName(n.compilerDir(), n.moduleDir(), n.compileFlagsJson()));
    if (first) {
      GraphEntry entry = GraphEntry.of(m.module());
      if (m.neuron().isPresent()) {
        entry = new GraphEntry(entry.fingerprint(), entry.moduleName(), entry.bytesIfNew(),
            m.neuron().get().compilerDir() + "/" + m.neuron().get().moduleDir(), name);
      }
      if (store.putGraph(entry) == PutOutcome.ADDED) { // the graph and its Neuron name in one transaction
        added++;
        newGraphs.put(m.fingerprint(), m.moduleName());
      }
      onNewGraph.accept(m);
    } else {
      name.ifPresent(n -> store.addNeuronName(m.fingerprint(), n));
    }
  }

  @Override
  public void unreadable(HloReadException e) {
    unreadable++;
    unreadableLine.accept(e.getMessage());
  }

  /** Modules captured, counting a graph seen again. */
  public int modules() {
    return modules;
  }

  public int uniqueGraphs() {
    return unique.size();
  }

  /** The graphs this run added to the cache (fingerprint -> module name), in the order they were added. */
  public SequencedMap<GraphFingerprint, String> newGraphs() {
    return java.util.Collections.unmodifiableSequencedMap(newGraphs);
  }

  /** Dumped files that could not be read. */
  public int unreadable() {
    return unreadable;
  }

  /** E.g. {@code dumped 14 modules from 2 processes: 9 unique graphs, 7 new, 2 already in the cache}. */
  public String summary() {
    return String.format("dumped %d module%s from %d process%s: %d unique graph%s, %d new, %d already in the cache",
        modules, modules == 1 ? "" : "s", processes.size(), processes.size() == 1 ? "" : "es",
        unique.size(), unique.size() == 1 ? "" : "s", added, unique.size() - added);
  }

  /** Per compiler (short name), how many of this run's graphs the cache already has compiled. */
  public Map<String, Integer> alreadyCompiled() {
    Map<String, Integer> out = new TreeMap<>();
    for (GraphFingerprint fp : unique) {
      for (ArtifactInfo a : store.entries(fp)) { // metadata only: no logs are read
        if (a.status() == EntryStatus.COMPILED) {
          out.merge(a.key().compiler().shortName(), 1, Integer::sum);
        }
      }
    }
    return out;
  }
}
