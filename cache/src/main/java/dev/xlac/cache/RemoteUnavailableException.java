package dev.xlac.cache;

/**
 * The remote tier failed in a way that makes it unusable for the rest of this command; its one line (the message)
 * is said already, so callers count the failure and go on without the remote.
 */
public final class RemoteUnavailableException extends Exception {
  public RemoteUnavailableException(String message) {
    super(message);
  }
}
