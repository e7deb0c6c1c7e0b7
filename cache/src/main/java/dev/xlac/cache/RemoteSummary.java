package dev.xlac.cache;

/**
 * What one command did with the remote tier, for its summary and reports: objects uploaded (and their bytes), already
 * there, failed (the remote was unavailable, or a local entry could not be read), skipped (not sent: the
 * write-through queue was full, or the entry is too large for one object), repaired ({@code push --repair});
 * objects downloaded into the local cache (and their bytes), already local, rejected (each named on its own line),
 * not there (a read-through the remote could not serve). Live while the command runs.
 */
public interface RemoteSummary {
  /** The remote's {@code s3://} URL. */
  String remote();

  long uploaded();

  long uploadedBytes();

  long alreadyThere();

  long failed();

  long skipped();

  long repaired();

  long downloaded();

  long downloadedBytes();

  long alreadyLocal();

  long rejected();

  /** Local misses the remote did not have either (read-through). */
  long misses();

  /** Why the remote was unavailable (the warning line), or null when it never was. */
  String unavailable();

  /** The uploads part: {@code uploaded 7 (2.3 MiB), already there 2, failed 0, skipped 0} (and {@code repaired N}). */
  String uploads();

  /** The downloads part: {@code downloaded 3 (1.2 MiB), already local 4, rejected 0}. */
  String downloads();

  /** A compile run's line: {@code remote s3://b/p: read through 3 (1.2 MiB) ..., uploaded 7 ...}. */
  String runLine();
}
