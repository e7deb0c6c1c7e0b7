package dev.xlac.cache;

import dev.xlac.core.os.ProcessBytes;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where the cache lives: {@code --cache DIR}, else {@code $XLAC_CACHE_DIR}, else {@code $XDG_CACHE_HOME/xlac} (an
 * absolute {@code XDG_CACHE_HOME} only, as the XDG base directory specification says), else {@code ~/.cache/xlac}.
 */
public final class CacheLocation {
  public static final String ENV = "XLAC_CACHE_DIR";

  private CacheLocation() {}

  public static Path resolve(Path option) {
    if (option == null) {
      ProcessBytes.requireFaithfulEnvironment(ENV); // not valid UTF-8: it would name another directory
      ProcessBytes.requireFaithfulEnvironment("XDG_CACHE_HOME");
    }
    return resolve(option, System.getenv(), Path.of(System.getProperty("user.home")));
  }

  static Path resolve(Path option, Map<String, String> env, Path home) {
    if (option != null) {
      return option.toAbsolutePath().normalize();
    }
    String fromEnv = env.get(ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      return Path.of(fromEnv).toAbsolutePath().normalize();
    }
    String xdg = env.get("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isEmpty() && Path.of(xdg).isAbsolute()) {
      return Path.of(xdg).resolve("xlac").normalize();
    }
    return home.resolve(".cache").resolve("xlac").toAbsolutePath().normalize();
  }
}
