package dev.xlac.cache;

/**
 * What {@code cache ls} shows.
 *
 * @param status only rows with this status (null: all)
 * @param compiler only rows made by a matching compiler (null: all; pending rows have no compiler and are left out)
 * @param sort row order
 */
public record ListQuery(EntryStatus status, CompilerFilter compiler, Sort sort) {
  /** Row orders: by fingerprint; largest first; oldest first (by creation); least recently used first. */
  public enum Sort { FINGERPRINT, SIZE, AGE, ACCESS }

  public ListQuery {
    sort = sort == null ? Sort.FINGERPRINT : sort;
  }

  public static ListQuery all() {
    return new ListQuery(null, null, Sort.FINGERPRINT);
  }
}
