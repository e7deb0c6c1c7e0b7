package dev.xlac.core;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Words why an operation failed, for the end of a one-line message ({@code xlac: cannot write X: REASON}).
 * Java's file-system exceptions carry only a path as their message ({@link NoSuchFileException}:
 * "/a/b"), so they are worded by their type, or by the system's reason ({@code Read-only file system}),
 * in the lower case of the house style. Where the path that failed is not the one the caller names (a
 * missing parent directory, a regular file where a directory should be), the words name it. Anything else
 * gives its message, or, with none, words made from its type. Wrappers (UncheckedIOException,
 * ExecutionException, an exception whose message is its cause's {@code toString()}) are looked through.
 * <p>It looks at the file system to say which part of a path is at fault, after the failure.
 */
final class Reasons {
  /** The C library's strerror texts that Java passes on as reasons, as the house style words them. */
  private static final Map<String, String> SYSTEM = Map.ofEntries(
      Map.entry("No such file or directory", "no such file or directory"),
      Map.entry("Permission denied", "permission denied"),
      Map.entry("Operation not permitted", "operation not permitted"),
      Map.entry("Not a directory", "not a directory"),
      Map.entry("Is a directory", "is a directory"),
      Map.entry("File exists", "already exists"),
      Map.entry("Directory not empty", "directory not empty"),
      Map.entry("Read-only file system", "read-only file system"),
      Map.entry("No space left on device", "no space left on device"),
      Map.entry("Disk quota exceeded", "disk quota exceeded"),
      Map.entry("File too large", "file too large"),
      Map.entry("Input/output error", "input/output error (the device reported a failure)"),
      Map.entry("Too many open files", "too many open files"),
      Map.entry("Invalid cross-device link", "cannot rename across file systems"),
      Map.entry("File name too long", "file name too long"),
      Map.entry("Stale file handle", "stale file handle (the file was removed on the server)"),
      Map.entry("Text file busy", "text file busy"));

  private Reasons() {}

  static String of(Throwable e) {
    Throwable t = unwrap(e);
    if (t instanceof FileSystemException f) {
      return fileSystem(f);
    }
    String m = t.getMessage();
    if (m != null && !m.isBlank()) {
      return t instanceof IOException ? SYSTEM.getOrDefault(m.strip(), m) : m;
    }
    return switch (t) {
      case EOFException x -> "unexpected end of file";
      case ClosedByInterruptException x -> "interrupted";
      case InterruptedIOException x -> "interrupted";
      case InterruptedException x -> "interrupted";
      case ClosedChannelException x -> "the file was closed";
      case CharacterCodingException x -> "malformed or unmappable characters";
      case OutOfMemoryError x -> "out of memory";
      case StackOverflowError x -> "stack overflow";
      default -> words(t.getClass().getSimpleName());
    };
  }

  private static Throwable unwrap(Throwable e) {
    Throwable t = e;
    for (int depth = 0; depth < 10 && t.getCause() != null && t.getCause() != t; depth++) {
      boolean wrapper = t instanceof UncheckedIOException || t instanceof ExecutionException
          || t instanceof CompletionException || t.getMessage() == null
          || t.getMessage().equals(t.getCause().toString());
      if (!wrapper) {
        break;
      }
      t = t.getCause();
    }
    return t;
  }

  private static String fileSystem(FileSystemException e) {
    Path file = e.getFile() == null ? null : Path.of(e.getFile());
    String system = e.getReason() == null ? null : e.getReason().strip();
    return switch (e) {
      case NoSuchFileException x -> missing(file);
      case AccessDeniedException x -> "permission denied";
      case FileAlreadyExistsException x -> file == null ? "already exists"
          : Files.exists(file, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(file)
              ? file + " exists and is not a directory" : file + " already exists";
      case NotDirectoryException x -> file == null ? "not a directory" : file + " is not a directory";
      case DirectoryNotEmptyException x -> "directory not empty";
      case NotLinkException x -> "not a symbolic link";
      case FileSystemLoopException x -> "a directory loop through symbolic links";
      case AtomicMoveNotSupportedException x -> "cannot rename atomically (across file systems?)";
      default -> {
        if ("Not a directory".equals(system) && file != null) {
          Path notDirectory = notDirectoryAncestor(file);
          yield notDirectory != null ? notDirectory + " is not a directory" : "not a directory";
        }
        if (system == null || system.isEmpty()) {
          yield "file system error";
        }
        yield SYSTEM.getOrDefault(system, Character.toLowerCase(system.charAt(0)) + system.substring(1));
      }
    };
  }

  /** "no such file or directory", or which directory on the way is missing. */
  private static String missing(Path file) {
    Path parent = file == null ? null : file.toAbsolutePath().getParent();
    if (parent == null || Files.isDirectory(parent)) {
      return "no such file or directory";
    }
    Path notDirectory = notDirectoryAncestor(parent);
    if (notDirectory != null) {
      return notDirectory + " is not a directory";
    }
    Path missing = parent;
    while (missing.getParent() != null && !Files.exists(missing.getParent())) {
      missing = missing.getParent();
    }
    return "directory " + missing + " does not exist";
  }

  /** The nearest existing path at or above {@code file} when it is not a directory; null otherwise. */
  private static Path notDirectoryAncestor(Path file) {
    for (Path p = file.toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.exists(p)) {
        return Files.isDirectory(p) ? null : p;
      }
    }
    return null;
  }

  /** {@code ClosedWatchServiceException} -> "closed watch service". */
  private static String words(String simpleName) {
    String base = simpleName.replaceFirst("(Exception|Error)$", "");
    if (base.isEmpty()) {
      return "unknown error";
    }
    return base.replaceAll("([a-z0-9])([A-Z])", "$1 $2").replaceAll("([A-Z]+)([A-Z][a-z])", "$1 $2")
        .toLowerCase(Locale.ROOT);
  }
}
