package dev.xlac.core.io;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * The per-user directory where xlac unpacks what a command it runs loads (the PJRT proxy library, the Python
 * hooks): {@code $XDG_CACHE_HOME/xlac} when that is absolute (as the XDG base directory specification says),
 * else {@code $HOME/.cache/xlac}, else {@code USER_HOME/.cache/xlac}. Not the compile cache's own location,
 * which {@code --cache} and {@code $XLAC_CACHE_DIR} move.
 */
public final class UserCacheRoot {
  private UserCacheRoot() {}

  /** Empty when neither variable nor {@code userHome} gives an absolute directory. */
  public static Optional<Path> of(Map<String, String> env, String userHome) {
    String xdg = env.get("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()) {
      return Optional.of(Path.of(xdg, "xlac"));
    }
    String home = env.getOrDefault("HOME", userHome);
    if (home == null || home.isBlank() || !Path.of(home).isAbsolute()) {
      return Optional.empty();
    }
    return Optional.of(Path.of(home, ".cache", "xlac"));
  }
}
