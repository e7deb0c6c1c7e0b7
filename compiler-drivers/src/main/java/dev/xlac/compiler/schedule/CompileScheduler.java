package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.core.os.ProcessGroups;
import dev.xlac.core.ProgramKey;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Compiles graphs in parallel through any {@link CompilerDriver}: a fixed set of worker threads,
 * each owning one driver (opened on its first job), taking jobs from one queue.
 *
 * <p>It accepts {@link #submit submissions} until {@link #finish()}, so it serves a fixed list
 * and a stream of graphs (a training script dumping graphs while it runs) alike. A graph
 * submitted twice is compiled once.
 *
 * <p>Admission: at most {@code jobs} compiles run at once, and while any runs, the next is
 * admitted only when {@link MemoryProbe} reports room for it. The probe reads a file
 * ({@code /proc/meminfo}) and is never called under the scheduler's lock, so a slow read holds up
 * only the worker that waits for room, never a submission or another worker. A compile that fails with
 * {@link FailureKind#OUT_OF_MEMORY} lowers the limit by one (never below 1) and is retried once.
 * Crashes, timeouts and out-of-memory failures are retried up to {@code retries} times; compile
 * errors never are. An {@link FailureKind#ENVIRONMENT} failure (the compiler cannot run, or a
 * driver reports an identity other than {@link DriverFactory#identity()}) stops the run: the
 * graphs not yet compiled end as {@link GraphResult.Status#NOT_RUN}.
 *
 * <p>Each final outcome goes to the {@link ResultSink} on the worker that produced it, before the
 * worker takes another job. {@link #cancel()} (Ctrl-C) stops admitting, interrupts the running
 * compiles (drivers stop their child processes) and stores nothing more.
 */
public final class CompileScheduler implements AutoCloseable {
  /** Jobs started this recently still count as needing their whole memory budget. */
  private static final long YOUNG_JOB_NANOS = TimeUnit.SECONDS.toNanos(5);
  private static final long MEMORY_POLL_MILLIS = 250;
  /**
   * Without {@code setsid} the drivers' workers share xlac's process group, so a worker killed by
   * the terminal's Ctrl-C can be seen dying before the JVM's own shutdown hook cancels the run;
   * waiting this long before recording a crash keeps that from being stored as the graph's failure.
   * With {@code setsid} (the usual case) workers lead groups of their own, the terminal's Ctrl-C
   * never reaches them, and a crash is recorded at once.
   */
  private static final long CRASH_SETTLE_MILLIS = 300;
  private static final boolean WORKERS_SHARE_TERMINAL_GROUP = ProcessGroups.setsid().isEmpty();

  private final DriverFactory drivers;
  private final CompilerIdentity identity;
  private final SchedulerSettings settings;
  private final ResultSink sink;
  private final CompileListener listener;
  private final MemoryProbe memory;
  private final List<Thread> workers = new ArrayList<>();

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Deque<Task> queue = new ArrayDeque<>();
  private final Map<ProgramKey, Task> submitted = new LinkedHashMap<>();
  /**
   * The admissions now running, one per compile. Each admission is its own object: a retried task
   * can be admitted again (by another worker) before the worker that ran it has released its
   * first admission, so a slot must never be found again through the task.
   */
  private final List<Admission> running = new ArrayList<>();
  private int limit;
  private boolean sealed;
  private boolean cancelled;
  private volatile String environmentFailure; // also read by notRun() outside the lock
  private Throwable fatal;

  /** Starts the workers (threads only; drivers are opened when there is work). */
  public CompileScheduler(DriverFactory drivers, SchedulerSettings settings, ResultSink sink, CompileListener listener,
      MemoryProbe memory) {
    this.drivers = drivers;
    this.identity = drivers.identity();
    this.settings = settings;
    this.sink = sink;
    this.listener = listener == null ? CompileListener.NONE : listener;
    this.memory = memory;
    this.limit = settings.jobs();
    for (int i = 0; i < settings.jobs(); i++) {
      workers.add(Thread.ofPlatform().name("xlac-compile-" + (i + 1)).daemon().start(this::work));
    }
  }

  /** How many compiles may run at once now (lowered by out-of-memory failures). */
  public int concurrencyLimit() {
    lock.lock();
    try {
      return limit;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Queues a graph and returns its eventual result. A fingerprint already submitted returns the
   * first submission's result. After {@link #finish()} or {@link #cancel()} this throws
   * {@link IllegalStateException}.
   */
  public CompletableFuture<GraphResult> submit(CompileJob job) {
    Task task;
    lock.lock();
    try {
      if (sealed || cancelled) {
        throw new IllegalStateException("the scheduler takes no more graphs");
      }
      Task earlier = submitted.get(job.fingerprint());
      if (earlier != null) {
        return earlier.result;
      }
      task = new Task(job);
      submitted.put(job.fingerprint(), task);
      if (environmentFailure != null) {
        task.result.complete(notRun(task, "not compiled: " + environmentFailure));
      } else {
        queue.addLast(task);
        changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
    listener.submitted(job);
    if (task.result.isDone()) {
      listener.finished(task.result.join());
    }
    return task.result;
  }

  /**
   * Takes no more submissions, waits for every submitted graph, stops the workers (closing their
   * drivers) and returns the results in submission order. Rethrows a {@link ResultSink} failure.
   */
  public List<GraphResult> finish() throws InterruptedException {
    sealAndJoinWorkers();
    if (fatal instanceof RuntimeException e) {
      throw e;
    }
    if (fatal instanceof Error e) {
      throw e;
    }
    if (fatal != null) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot store a result: " + XlacException.reason(fatal), fatal);
    }
    lock.lock();
    try {
      return submitted.values().stream().map(t -> t.result.join()).toList();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the run: queued graphs end as NOT_RUN, running compiles are interrupted (their results
   * are neither stored nor reported as failures), and nothing else is admitted. Returns at once;
   * {@link #finish()} waits for the workers. Safe to call from a shutdown hook, and twice.
   */
  public void cancel() {
    List<Task> dropped;
    lock.lock();
    try {
      if (cancelled) {
        return;
      }
      cancelled = true;
      dropped = new ArrayList<>(queue);
      queue.clear();
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    for (Task t : dropped) {
      complete(t, notRun(t, "not compiled: the run was stopped"));
    }
    workers.forEach(Thread::interrupt);
  }

  /** Cancels the run if it was not finished, and waits for the workers. */
  @Override
  public void close() throws InterruptedException {
    boolean finished;
    lock.lock();
    try {
      finished = sealed && queue.isEmpty() && running.isEmpty();
    } finally {
      lock.unlock();
    }
    if (!finished) {
      cancel();
    }
    sealAndJoinWorkers();
  }

  /** Takes no more submissions and waits until every worker has ended (and closed its driver). */
  private void sealAndJoinWorkers() throws InterruptedException {
    lock.lock();
    try {
      sealed = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    for (Thread w : workers) {
      w.join();
    }
  }

  // ---------------------------------------------------------------- workers

  private void work() {
    CompilerDriver driver = null;
    try {
      for (Admission admission; (admission = admit()) != null; ) {
        Task task = admission.task();
        try {
          if (driver == null) {
            driver = openDriver();
          }
          run(task, driver);
        } catch (DriverUnusable e) {
          driver = closeQuietly(driver);
          stopForEnvironment(task, e.getMessage());
        } catch (Throwable t) {
          failRun(task, t);
        } finally {
          release(admission);
        }
      }
    } finally {
      closeQuietly(driver);
    }
  }

  /**
   * One admitted compile of a task: the slot it holds until {@link #release}. A class, not a
   * record: slots are told apart by identity, never by their fields.
   */
  private static final class Admission {
    private final Task task;
    private final long since;

    Admission(Task task, long since) {
      this.task = task;
      this.since = since;
    }

    Task task() {
      return task;
    }

    long since() {
      return since;
    }
  }

  /**
   * The next task this worker may run, or null when the run is over for it. When memory decides, the
   * probe is read with the lock released, and the state is looked at again under the lock with that
   * sample: the decision uses the jobs running then, never a count from before the read.
   */
  private Admission admit() {
    boolean sampled = false; // whether available holds a reading taken since the last look under the lock
    long available = 0;
    lock.lock();
    try {
      while (true) {
        if (cancelled || fatal != null) {
          return null;
        }
        if (!queue.isEmpty() && running.size() < limit) {
          if (running.isEmpty() || sampled && available >= memoryNeededForOneMore()) {
            Admission admission = new Admission(queue.pollFirst(), System.nanoTime());
            running.add(admission);
            return admission;
          }
          if (sampled) { // no room: wait for a job to end, or a while, then read the memory again
            sampled = false;
            changed.await(MEMORY_POLL_MILLIS, TimeUnit.MILLISECONDS);
            continue;
          }
          lock.unlock();
          try {
            available = memory.availableBytes();
          } finally {
            lock.lock();
          }
          sampled = true;
          continue;
        }
        sampled = false;
        if (queue.isEmpty() && sealed && running.isEmpty()) {
          return null;
        }
        changed.await();
      }
    } catch (InterruptedException e) {
      return null; // cancel() interrupts idle workers too
    } finally {
      lock.unlock();
    }
  }

  /** What one more job needs: its budget, and that of every job too young to show its own use. Under the lock. */
  private long memoryNeededForOneMore() {
    long now = System.nanoTime();
    long young = running.stream().filter(a -> now - a.since() < YOUNG_JOB_NANOS).count();
    return settings.memoryPerJob() * (young + 1);
  }

  private void release(Admission admission) {
    lock.lock();
    try {
      running.remove(admission);
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private CompilerDriver openDriver() {
    CompilerDriver driver;
    try {
      driver = drivers.open();
    } catch (XlacException e) {
      throw new DriverUnusable(e.getMessage());
    }
    if (!driver.identity().equals(identity)) {
      String got = driver.identity().describe();
      closeQuietly(driver);
      throw new DriverUnusable("a compiler worker reports " + got + " instead of " + identity.describe());
    }
    return driver;
  }

  private void run(Task task, CompilerDriver driver) throws Exception {
    CompileJob job = task.job;
    byte[] module;
    try {
      module = job.module().load();
    } catch (Exception e) {
      complete(task, new GraphResult(job.fingerprint(), job.moduleName(), GraphResult.Status.NOT_RUN, Duration.ZERO,
          task.attempts, null,
          "cannot read the graph " + job.describe() + ": " + CompileOutcome.oneLine(XlacException.reason(e))));
      return;
    }
    task.attempts++;
    listener.started(job, task.attempts);
    CompileOutcome outcome = driver.compile(job.request(module));
    task.compileTime = task.compileTime.plus(outcome.elapsed());
    if (WORKERS_SHARE_TERMINAL_GROUP && outcome instanceof CompileOutcome.Failure f && f.kind() == FailureKind.CRASH
        && !isCancelled()) {
      try {
        Thread.sleep(CRASH_SETTLE_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // cancel() interrupted us: handled just below
      }
    }
    if (isCancelled()) {
      complete(task, notRun(task, "not compiled: the run was stopped"));
      return;
    }
    switch (outcome) {
      case CompileOutcome.Success s -> {
        sink.store(job, s);
        complete(task, new GraphResult(job.fingerprint(), job.moduleName(), GraphResult.Status.COMPILED,
            task.compileTime, task.attempts, null, null));
      }
      case CompileOutcome.Failure f when f.kind() == FailureKind.ENVIRONMENT -> throw new DriverUnusable(f.message());
      case CompileOutcome.Failure f -> {
        String retry = retryPlan(task, f);
        if (retry != null) {
          listener.retrying(job, f, retry);
          return;
        }
        sink.store(job, f);
        complete(task, new GraphResult(job.fingerprint(), job.moduleName(), GraphResult.Status.FAILED,
            task.compileTime, task.attempts, f.kind(), f.message()));
      }
    }
  }

  /** Requeues a transiently failed task and says how, or returns null when it is final. */
  private String retryPlan(Task task, CompileOutcome.Failure f) {
    boolean oom = f.kind() == FailureKind.OUT_OF_MEMORY;
    boolean transientKind = oom || f.kind() == FailureKind.CRASH || f.kind() == FailureKind.TIMEOUT;
    if (!transientKind) {
      return null;
    }
    lock.lock();
    try {
      String why;
      if (oom && !task.oomRetried) {
        task.oomRetried = true;
        limit = Math.max(1, Math.min(limit, running.size()) - 1);
        why = "out of memory; retrying with at most " + limit + " parallel job" + (limit == 1 ? "" : "s");
      } else if (task.retries < settings.retries()) {
        task.retries++;
        why = GraphResult.kindName(f.kind()) + "; retry " + task.retries + " of " + settings.retries();
      } else {
        return null;
      }
      queue.addLast(task);
      changed.signalAll();
      return why;
    } finally {
      lock.unlock();
    }
  }

  private boolean isCancelled() {
    lock.lock();
    try {
      return cancelled;
    } finally {
      lock.unlock();
    }
  }

  /** The compiler cannot run: this graph and every queued one end as NOT_RUN; later submissions too. */
  private void stopForEnvironment(Task task, String message) {
    boolean stopped;
    List<Task> dropped = List.of();
    lock.lock();
    try {
      stopped = cancelled; // a driver start interrupted by cancel() is no environment problem
      if (!stopped) {
        if (environmentFailure == null) {
          environmentFailure = message;
        }
        dropped = new ArrayList<>(queue);
        queue.clear();
        changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
    if (stopped) {
      complete(task, notRun(task, "not compiled: the run was stopped"));
      return;
    }
    complete(task, notRun(task, message)); // environmentFailure is set: kind ENVIRONMENT
    for (Task t : dropped) {
      complete(t, notRun(t, "not compiled: " + message));
    }
  }

  /** A result could not be stored, or a bug: stop everything; finish() rethrows. */
  private void failRun(Task task, Throwable t) {
    lock.lock();
    try {
      if (fatal == null) {
        fatal = t;
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    complete(task, notRun(task, "not stored: " + CompileOutcome.oneLine(XlacException.reason(t))));
    cancel();
  }

  private GraphResult notRun(Task task, String message) {
    FailureKind kind = environmentFailure != null ? FailureKind.ENVIRONMENT : null;
    return new GraphResult(task.job.fingerprint(), task.job.moduleName(), GraphResult.Status.NOT_RUN,
        task.compileTime, task.attempts, kind, CompileOutcome.oneLine(message));
  }

  private void complete(Task task, GraphResult result) {
    if (task.result.complete(result)) {
      listener.finished(result);
    }
  }

  private static CompilerDriver closeQuietly(CompilerDriver driver) {
    if (driver != null) {
      boolean interrupted = Thread.interrupted(); // let the driver stop its worker in an orderly way
      try {
        driver.close();
      } catch (RuntimeException e) {
        // closing is best effort; the driver's child processes die with their pipes
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
    return null;
  }

  /** One submitted graph and its attempts so far; fields change only on the worker that holds it. */
  private static final class Task {
    final CompileJob job;
    final CompletableFuture<GraphResult> result = new CompletableFuture<>();
    int attempts;
    int retries;
    boolean oomRetried;
    Duration compileTime = Duration.ZERO;

    Task(CompileJob job) {
      this.job = job;
    }
  }

  /** The driver could not be opened or said its compiler cannot run. */
  private static final class DriverUnusable extends RuntimeException {
    DriverUnusable(String message) {
      super(message, null, false, false);
    }
  }
}
