package dev.xlac.cache.remote;

import dev.xlac.cache.RemoteSummary;
import dev.xlac.core.Sizes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/** The counters behind a {@link RemoteSummary}, counted by the remote tier's classes. Thread-safe. */
public final class RemoteStats implements RemoteSummary {
  final AtomicLong uploaded = new AtomicLong();
  final AtomicLong uploadedBytes = new AtomicLong();
  final AtomicLong alreadyThere = new AtomicLong();
  final AtomicLong failed = new AtomicLong();
  final AtomicLong skipped = new AtomicLong();
  /** Objects that push --repair found damaged and replaced. */
  final AtomicLong repaired = new AtomicLong();
  final AtomicLong downloaded = new AtomicLong();
  final AtomicLong downloadedBytes = new AtomicLong();
  final AtomicLong alreadyLocal = new AtomicLong();
  final AtomicLong rejected = new AtomicLong();
  final AtomicLong misses = new AtomicLong();
  private final String remote;
  private volatile String unavailable;

  public RemoteStats(String remote) {
    this.remote = remote;
  }

  public String remote() {
    return remote;
  }

  public long uploaded() {
    return uploaded.get();
  }

  public long uploadedBytes() {
    return uploadedBytes.get();
  }

  public long alreadyThere() {
    return alreadyThere.get();
  }

  public long failed() {
    return failed.get();
  }

  public long skipped() {
    return skipped.get();
  }

  public long downloaded() {
    return downloaded.get();
  }

  public long downloadedBytes() {
    return downloadedBytes.get();
  }

  public long alreadyLocal() {
    return alreadyLocal.get();
  }

  public long rejected() {
    return rejected.get();
  }

  /** Local misses the remote did not have either (read-through). */
  public long misses() {
    return misses.get();
  }

  /** Why the remote was unavailable (the warning line), or null when it never was. */
  public String unavailable() {
    return unavailable;
  }

  /** Counts a conditional put of {@code bytes}: uploaded, or already there. */
  void put(RemoteTier.Put put, long bytes) {
    if (put == RemoteTier.Put.WRITTEN) {
      uploaded.incrementAndGet();
      uploadedBytes.addAndGet(bytes);
    } else {
      alreadyThere.incrementAndGet();
    }
  }

  /** Records why the remote was unavailable (the first reason given stays). */
  public void unavailable(String why) {
    if (unavailable == null) {
      unavailable = why;
    }
  }

  /** The uploads part: {@code uploaded 7 (2.3 MiB), already there 2, failed 0, skipped 0} (and {@code repaired N}). */
  public String uploads() {
    return String.format(Locale.ROOT, "uploaded %d (%s), already there %d, failed %d, skipped %d", uploaded(),
        Sizes.human(uploadedBytes()), alreadyThere(), failed(), skipped())
        + (repaired.get() == 0 ? "" : ", repaired " + repaired.get());
  }

  /** Damaged objects that push --repair replaced. */
  public long repaired() {
    return repaired.get();
  }

  /** The downloads part: {@code downloaded 3 (1.2 MiB), already local 4, rejected 0}. */
  public String downloads() {
    return String.format(Locale.ROOT, "downloaded %d (%s), already local %d, rejected %d", downloaded(),
        Sizes.human(downloadedBytes()), alreadyLocal(), rejected());
  }

  /** A compile run's line: {@code remote s3://b/p: read through 3 (1.2 MiB) ..., uploaded 7 ...}. */
  public String runLine() {
    List<String> parts = new ArrayList<>();
    parts.add(String.format(Locale.ROOT, "read through %d (%s), not there %d, rejected %d", downloaded(),
        Sizes.human(downloadedBytes()), misses(), rejected()));
    parts.add(uploads());
    return "remote " + remote + ": " + String.join("; ", parts) + (unavailable == null ? "" : " (unavailable)");
  }
}
