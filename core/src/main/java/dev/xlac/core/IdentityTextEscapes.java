package dev.xlac.core;

/**
 * The backslash escaping of the line-based identity texts (a compiler identity, a plugin identity): {@code \}
 * as {@code \\}, a newline as {@code \n}, and one more character that the text keeps off its lines as
 * {@code \}{@code code} ({@code =} as {@code \e} in a compiler identity, NUL as {@code \0} in a plugin's).
 */
public final class IdentityTextEscapes {
  private IdentityTextEscapes() {}

  public static String escape(String s, char kept, char code) {
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace(String.valueOf(kept), "\\" + code);
  }

  /** The reverse of {@link #escape}; any other escaped character stands for itself, a lone final {@code \} too. */
  public static String unescape(String s, char kept, char code) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && i + 1 < s.length()) {
        char n = s.charAt(++i);
        b.append(n == 'n' ? '\n' : n == code ? kept : n);
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
