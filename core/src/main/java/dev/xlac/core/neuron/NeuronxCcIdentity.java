package dev.xlac.core.neuron;

import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.XlacException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one construction of a {@code neuronx-cc} {@link CompilerIdentity}, shared by the compiler
 * driver (which asks the compiler for its version) and the Neuron cache layout (which reads the
 * version from a {@code neuronxcc-<version>} directory and the flags from
 * {@code compile_flags.json}). Both must arrive at the same identity for the same compiler version,
 * target and flags, or an imported NEFF would never be found by a later compile.
 *
 * <p>Normalisation of a flag list, in order:
 *
 * <ol>
 *   <li>The flags Neuron's framework wrapper keeps for itself are dropped with their values:
 *       {@code --cache_dir}, {@code --log_level} (both take a value, as {@code --f=v} or {@code --f v})
 *       and {@code --no_cache}, {@code --retry_failed_compilation} (switches; a {@code =v} form is
 *       dropped too).
 *   <li>The arguments the driver writes itself are dropped: {@code --framework}, {@code --output}
 *       (with their values).
 *   <li>{@code --target} ({@code --target=X} or {@code --target X}) is taken out of the list and becomes
 *       the identity's target; the last one wins, as with the compiler's own parser.
 *   <li>Everything else is kept as written and in its order: later flags can override earlier ones, so
 *       order is part of the identity. {@code --a=b} and {@code --a b} are therefore different identities.
 * </ol>
 *
 * Without a {@code --target} the target is {@link #DEFAULT_TARGET} ({@code trn1}, neuronx-cc's own
 * default).
 */
public final class NeuronxCcIdentity {
  /** The driver name in every neuronx-cc identity. */
  public static final String DRIVER = "neuronx-cc";
  /** The target when the flags name none: neuronx-cc's own default. */
  public static final String DEFAULT_TARGET = "trn1";
  /** The targets neuronx-cc accepts. */
  public static final Set<String> TARGETS = Set.of("trn1", "trn1n", "trn2", "inf2");
  /** The environment variable torch-neuronx and neuron_parallel_compile read the flags from. */
  public static final String FLAGS_ENV = "NEURON_CC_FLAGS";

  private static final Map<String, Boolean> WRAPPER_OWNED = Map.of(
      "--cache_dir", true, "--log_level", true, "--no_cache", false, "--retry_failed_compilation", false);
  private static final Set<String> DRIVER_OWNED = Set.of("--framework", "--output");
  private static final Pattern VERSION = Pattern.compile("\\d+(?:\\.\\d+)+(?:[+.\\-][0-9A-Za-z]+)*");
  private static final Pattern COMPILER_LINE = Pattern.compile("(?i)compiler\\s+version\\s*:?\\s*(\\S+)");

  private NeuronxCcIdentity() {}

  /** Flags after {@link #normalise}: what goes into the identity, the target they name, and what was dropped. */
  public record Flags(List<String> kept, Optional<String> target, List<String> dropped) {
    public Flags {
      kept = List.copyOf(kept);
      dropped = List.copyOf(dropped);
    }
  }

  /** Normalises a flag list (see the class comment). */
  public static Flags normalise(List<String> flags) {
    List<String> kept = new ArrayList<>();
    List<String> dropped = new ArrayList<>();
    String target = null;
    for (int i = 0; i < flags.size(); i++) {
      String f = flags.get(i);
      int eq = f.indexOf('=');
      String name = f.startsWith("--") && eq > 0 ? f.substring(0, eq) : f;
      boolean inline = !name.equals(f);
      boolean nextIsValue = i + 1 < flags.size() && !flags.get(i + 1).startsWith("-");
      if (name.equals("--target")) {
        if (inline) {
          target = f.substring(eq + 1);
        } else if (nextIsValue) {
          target = flags.get(++i);
        } else {
          throw XlacException.badInput("neuronx-cc flag --target has no value");
        }
      } else if (WRAPPER_OWNED.containsKey(name) || DRIVER_OWNED.contains(name)) {
        boolean takesValue = WRAPPER_OWNED.getOrDefault(name, true);
        if (!inline && takesValue && nextIsValue) {
          dropped.add(f + " " + flags.get(++i));
        } else {
          dropped.add(f);
        }
      } else {
        kept.add(f);
      }
    }
    if (target != null && !TARGETS.contains(target)) {
      throw XlacException.badInput("neuronx-cc target '" + target + "' is not one of " + sortedTargets());
    }
    return new Flags(kept, Optional.ofNullable(target), dropped);
  }

  /** The identity of neuronx-cc {@code version} compiling for {@code target} with already normalised flags. */
  public static CompilerIdentity identity(String version, String target, List<String> normalisedFlags) {
    if (!TARGETS.contains(target)) {
      throw XlacException.badInput("neuronx-cc target '" + target + "' is not one of " + sortedTargets());
    }
    return new CompilerIdentity(DRIVER, version, target, normalisedFlags, Map.of());
  }

  /**
   * The identity of a Neuron cache entry: the version from its {@code neuronxcc-<version>} directory
   * name, the target from the {@code --target} in its flags (else {@link #DEFAULT_TARGET}), and its
   * normalised flags.
   */
  public static CompilerIdentity forCacheEntry(String versionDirectory, List<String> compileFlags) {
    String version = versionOfDirectory(versionDirectory).orElseThrow(() -> XlacException.badInput(
        "'" + versionDirectory + "' is not a Neuron cache version directory (neuronxcc-<version>)"));
    Flags f = normalise(compileFlags);
    return identity(version, f.target().orElse(DEFAULT_TARGET), f.kept());
  }

  /** {@code neuronxcc-2.15.128.0+56dc5a86} → {@code 2.15.128.0+56dc5a86}; empty for any other name. */
  public static Optional<String> versionOfDirectory(String name) {
    if (!name.startsWith(NeuronFiles.VERSION_DIR_PREFIX)) {
      return Optional.empty();
    }
    String v = name.substring(NeuronFiles.VERSION_DIR_PREFIX.length());
    return VERSION.matcher(v).matches() ? Optional.of(v) : Optional.empty();
  }

  /** The Neuron cache directory of a compiler version: {@code neuronxcc-<version>}. */
  public static String versionDirectory(String version) {
    return NeuronFiles.VERSION_DIR_PREFIX + version;
  }

  /**
   * The version in the output of {@code neuronx-cc --version}. The compiler prints a line like
   * {@code NeuronX Compiler version 2.15.128.0+56dc5a86} followed by the versions of Python, NumPy
   * and others, so the line naming the compiler is preferred; otherwise the first version-like token
   * of the first non-blank line. Empty when there is none.
   */
  public static Optional<String> parseVersionOutput(String output) {
    for (String line : output.lines().toList()) {
      Matcher m = COMPILER_LINE.matcher(line);
      if (m.find()) {
        Matcher v = VERSION.matcher(m.group(1));
        if (v.lookingAt()) {
          return Optional.of(v.group());
        }
      }
    }
    return output.lines().filter(l -> !l.isBlank()).findFirst().flatMap(first -> {
      Matcher v = VERSION.matcher(first);
      return v.find() ? Optional.of(v.group()) : Optional.empty();
    });
  }

  /**
   * Splits a flags string the way a POSIX shell splits words: blanks separate, single quotes keep
   * everything literally, double quotes keep everything but {@code \"} and {@code \\}, a backslash
   * outside quotes escapes the next character. No expansion of variables or globs.
   *
   * @throws XlacException (bad input) for an unterminated quote or a trailing backslash
   */
  public static List<String> splitFlags(String text) {
    List<String> out = new ArrayList<>();
    StringBuilder word = new StringBuilder();
    boolean inWord = false;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\'') {
        int end = text.indexOf('\'', i + 1);
        if (end < 0) {
          throw XlacException.badInput("neuronx-cc flags have an unterminated single quote: " + text);
        }
        word.append(text, i + 1, end);
        i = end;
        inWord = true;
      } else if (c == '"') {
        int j = i + 1;
        for (; j < text.length() && text.charAt(j) != '"'; j++) {
          char d = text.charAt(j);
          if (d == '\\' && j + 1 < text.length() && "\"\\$`".indexOf(text.charAt(j + 1)) >= 0) {
            d = text.charAt(++j);
          }
          word.append(d);
        }
        if (j >= text.length()) {
          throw XlacException.badInput("neuronx-cc flags have an unterminated double quote: " + text);
        }
        i = j;
        inWord = true;
      } else if (c == '\\') {
        if (i + 1 >= text.length()) {
          throw XlacException.badInput("neuronx-cc flags end in a backslash: " + text);
        }
        word.append(text.charAt(++i));
        inWord = true;
      } else if (Character.isWhitespace(c)) {
        if (inWord) {
          out.add(word.toString());
          word.setLength(0);
          inWord = false;
        }
      } else {
        word.append(c);
        inWord = true;
      }
    }
    if (inWord) {
      out.add(word.toString());
    }
    return out;
  }

  /**
   * The flags a compile uses: {@code compilerFlags} when given (even empty), otherwise
   * {@code $NEURON_CC_FLAGS} from {@code environment}, otherwise none. Split, not yet normalised.
   */
  public static List<String> chooseFlags(String compilerFlags, Map<String, String> environment) {
    if (compilerFlags != null) {
      return splitFlags(compilerFlags);
    }
    String env = environment.get(FLAGS_ENV);
    return env == null ? List.of() : splitFlags(env);
  }

  private static String sortedTargets() {
    return String.join(", ", new java.util.TreeSet<>(TARGETS));
  }
}
