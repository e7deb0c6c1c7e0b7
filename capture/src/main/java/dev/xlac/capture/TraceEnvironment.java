package dev.xlac.capture;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The environment a traced command runs in: the user's own, plus what makes the frontend write
 * its graphs under the staging directory.
 *
 * <ul>
 *   <li>XLA frontends (JAX, PyTorch/XLA, auto): {@code XLA_FLAGS} merged by {@link XlaFlags};
 *       {@code JAX_COMPILER_DETAILED_LOGGING_MIN_OPS=0}, because JAX marks modules with fewer MLIR
 *       ops (default 10) as not worth XLA's detailed logging, which includes dumping; and xlac's Python
 *       hooks ({@link PythonHooks}) first on {@code PYTHONPATH}, whose {@code _xlac_dump} gives each Python
 *       process its own dump directory {@code STAGING/pid-N} ({@code STAGING/main} for anything else).</li>
 *   <li>Neuron: {@code NEURON_EXTRACT_GRAPHS_ONLY=1} (graphs are written to the compile cache and
 *       not compiled; execution returns zeros) and {@code NEURON_COMPILE_CACHE_URL=STAGING}.</li>
 * </ul>
 *
 * @param variables the complete environment for the command
 * @param notes what was overridden, one line each, for the user
 */
public record TraceEnvironment(Map<String, String> variables, List<String> notes) {

  public static final String DUMP_BASE = "XLAC_DUMP_BASE";
  public static final String JAX_MIN_OPS = "JAX_COMPILER_DETAILED_LOGGING_MIN_OPS";
  public static final String NEURON_EXTRACT = "NEURON_EXTRACT_GRAPHS_ONLY";
  public static final String NEURON_CACHE_URL = "NEURON_COMPILE_CACHE_URL";

  /**
   * @param frontend a resolved frontend
   * @param user the user's environment
   * @param staging where graphs are to be written (it must exist)
   */
  public static TraceEnvironment of(Frontend frontend, Map<String, String> user, Path staging) {
    Map<String, String> env = new HashMap<>(withoutLauncherLocale(user));
    List<String> notes = new ArrayList<>();
    if (frontend == Frontend.NEURON) {
      String old = user.get(NEURON_CACHE_URL);
      if (old != null && !old.isBlank()) {
        notes.add(NEURON_CACHE_URL + " is " + old + "; for the capture xlac points it at its own staging directory,"
            + " so that cache is neither read nor changed");
      }
      env.put(NEURON_EXTRACT, "1");
      env.put(NEURON_CACHE_URL, staging.toString());
      return new TraceEnvironment(Map.copyOf(env), List.copyOf(notes));
    }
    XlaFlags.Merged flags = XlaFlags.merge(user.get("XLA_FLAGS"), staging.resolve("main"));
    notes.addAll(flags.notes());
    env.put("XLA_FLAGS", flags.flags());
    env.put(DUMP_BASE, staging.toString());
    if (frontend == Frontend.JAX || frontend == Frontend.AUTO) {
      env.put(JAX_MIN_OPS, "0");
    }
    env.put("PYTHONPATH", PythonHooks.firstOn(user.get("PYTHONPATH"), user));
    return new TraceEnvironment(Map.copyOf(env), List.copyOf(notes));
  }

  /** Set by the {@code ./xlac} launcher when it ran the JVM in this locale instead of the user's non-UTF-8 one. */
  static final String LAUNCHER_LC_ALL = "XLAC_LAUNCHER_LC_ALL";
  /** The user's own {@code LC_ALL}, set by the launcher with {@link #LAUNCHER_LC_ALL} when the user had one. */
  static final String USER_LC_ALL = "XLAC_USER_LC_ALL";

  /**
   * {@code env} with the user's own locale back: the launcher may have set {@code LC_ALL} so that the JVM
   * reads UTF-8 arguments and file names; the user's command gets what the user had.
   */
  static Map<String, String> withoutLauncherLocale(Map<String, String> env) {
    String set = env.get(LAUNCHER_LC_ALL);
    if (set == null) {
      return env;
    }
    Map<String, String> own = new HashMap<>(env);
    own.remove(LAUNCHER_LC_ALL);
    String user = own.remove(USER_LC_ALL);
    if (set.equals(env.get("LC_ALL"))) {
      if (user == null) {
        own.remove("LC_ALL");
      } else {
        own.put("LC_ALL", user);
      }
    }
    return own;
  }

}
