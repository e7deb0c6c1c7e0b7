package dev.xlac.cache;

import dev.xlac.core.CompilerIdentity;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A user's {@code --compiler X}: a short name ({@code pjrt:cpu}, matched exactly), a driver name
 * ({@code neuronx-cc}, matching every target of it), or a prefix of at least 6 hex digits of the
 * compiler identity's digest.
 */
public record CompilerFilter(String text) {
  private static final Pattern DIGEST_PREFIX = Pattern.compile("^[0-9a-f]{6,64}$");

  public CompilerFilter {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty compiler filter");
    }
    text = text.strip();
  }

  public static CompilerFilter parse(String text) {
    return new CompilerFilter(text);
  }

  /** Whether an entry made by {@code identity} (null when its identity record is missing) with this digest matches. */
  public boolean matches(String digest, CompilerIdentity identity) {
    String t = text.toLowerCase(Locale.ROOT);
    if (DIGEST_PREFIX.matcher(t).matches() && digest.startsWith(t)) {
      return true;
    }
    return identity != null && (identity.shortName().equals(text) || identity.driver().equals(text));
  }
}
