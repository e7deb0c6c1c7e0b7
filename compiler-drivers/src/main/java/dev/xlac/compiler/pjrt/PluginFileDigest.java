package dev.xlac.compiler.pjrt;

import dev.xlac.core.XlacException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The SHA-256 of a PJRT plugin file: the build identity PJRT itself does not report, taken the same way for
 * a loaded plugin ({@link PjrtPlugin#fileSha256()}) and for one that is only named ({@code xlac run}'s real
 * plugin). Apart from {@link PjrtApi} so that hashing a file sets up no native calls.
 */
public final class PluginFileDigest {
  private PluginFileDigest() {}

  /**
   * Lowercase hex SHA-256 of the file.
   *
   * @throws XlacException exit code 3, one line naming the file, when it cannot be read
   */
  public static String sha256(Path plugin) {
    try (InputStream in = Files.newInputStream(plugin)) {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      byte[] buffer = new byte[1 << 20];
      for (int n; (n = in.read(buffer)) > 0; ) {
        sha.update(buffer, 0, n);
      }
      return HexFormat.of().formatHex(sha.digest());
    } catch (IOException e) {
      throw XlacException.environment("cannot use PJRT plugin " + plugin + ": cannot read it ("
          + XlacException.reason(e) + ")");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
