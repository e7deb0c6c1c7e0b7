package dev.xlac.cache.ops;

import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/** Finds the stored graph a user means: a full fingerprint or a unique prefix of at least 6 hex digits. */
public final class GraphResolver {
  private GraphResolver() {}

  /** The one stored graph {@code text} names; bad input when it names none, or more than one. */
  public static GraphFingerprint resolve(Store store, String text) {
    String t = GraphFingerprint.prefixDigits(text);
    if (t == null) {
      throw XlacException.badInput("not a fingerprint: '" + text + "' (give hlo1:<64 hex digits> or at least 6 of them)");
    }
    byte[] seek = HexFormat.of().parseHex(t.substring(0, t.length() & ~1));
    List<byte[]> found = new ArrayList<>();
    try (Cursor c = store.graphs(seek)) {
      for (; c.valid() && found.size() < 2; c.next()) {
        byte[] fp = c.key();
        if (!Keys.hex(fp).startsWith(t)) {
          break;
        }
        found.add(fp);
      }
    }
    if (found.isEmpty()) {
      throw new XlacException(ExitCode.BAD_INPUT, "no graph in cache " + store.directory() + " has fingerprint " + text);
    }
    if (found.size() > 1) {
      throw XlacException.badInput("fingerprint prefix " + text + " is ambiguous; give more digits");
    }
    return Keys.fingerprint(found.getFirst());
  }
}
