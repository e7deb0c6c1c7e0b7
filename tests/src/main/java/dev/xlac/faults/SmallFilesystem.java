package dev.xlac.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A small tmpfs for the disk-full scenario. First choice: a private mount namespace of an
 * unprivileged user namespace ({@code unshare -Urm}), held open by a sleeping process; commands
 * enter it with {@code nsenter}, and nobody else on the machine sees the mount. Else, as root, a
 * plain {@code mount -t tmpfs}, unmounted on close. Else none, and {@link #make} says why.
 */
final class SmallFilesystem implements AutoCloseable {
  final Path mountPoint;
  /** Prefix for commands that must see the filesystem (empty for a plain mount). */
  final List<String> wrapper;
  final String how;
  private final Process holder;

  private SmallFilesystem(Path mountPoint, List<String> wrapper, String how, Process holder) {
    this.mountPoint = mountPoint;
    this.wrapper = wrapper;
    this.how = how;
    this.holder = holder;
  }

  /** @return the filesystem, or null with the reasons each way failed added to {@code whyNot} */
  static SmallFilesystem make(Path mountPoint, long bytes, List<String> whyNot) throws InterruptedException {
    try {
      Files.createDirectories(mountPoint);
    } catch (IOException e) {
      whyNot.add("cannot create " + mountPoint + ": " + e.getMessage());
      return null;
    }
    String size = "size=" + bytes;
    Process p = null;
    try {
      p = new ProcessBuilder("unshare", "-Urm", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs -o " + size + " xlac-fault-suite \"$0\" && echo mounted && exec sleep 7200",
          mountPoint.toString()).redirectErrorStream(true).start();
      Process proc = p;
      CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
        try {
          return new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8)).readLine();
        } catch (IOException e) {
          return null;
        }
      });
      String first = line.get(20, TimeUnit.SECONDS);
      if ("mounted".equals(first)) {
        List<String> wrapper = List.of("nsenter", "-t", Long.toString(p.pid()), "-U", "-m", "--preserve-credentials",
            "--");
        SmallFilesystem fs = new SmallFilesystem(mountPoint, wrapper, "tmpfs of " + bytes
            + " bytes in a private mount namespace (unshare -Urm, entered with nsenter)", p);
        String check = fs.check(bytes);
        if (check == null) {
          return fs;
        }
        fs.close();
        whyNot.add("unshare -Urm mounted a tmpfs but commands cannot enter it: " + check);
      } else {
        whyNot.add("unshare -Urm + mount -t tmpfs: " + (first == null ? "failed" : first));
        p.destroyForcibly();
      }
    } catch (IOException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      whyNot.add("unshare -Urm + mount -t tmpfs: " + e.getMessage());
      if (p != null) {
        p.destroyForcibly();
      }
    }
    try {
      String uid = run(List.of("id", "-u")).strip();
      if (!uid.equals("0")) {
        whyNot.add("a plain mount needs root (uid " + uid + ")");
        return null;
      }
      String out = run(List.of("mount", "-t", "tmpfs", "-o", size, "xlac-fault-suite", mountPoint.toString()));
      SmallFilesystem fs = new SmallFilesystem(mountPoint, List.of(), "tmpfs of " + bytes + " bytes (mount as root)",
          null);
      String check = fs.check(bytes);
      if (check == null) {
        return fs;
      }
      fs.close();
      whyNot.add("mount -t tmpfs as root: " + (out.isBlank() ? check : out.strip()));
    } catch (IOException e) {
      whyNot.add("mount -t tmpfs as root: " + e.getMessage());
    }
    return null;
  }

  /** @return null when a command run through {@link #wrapper} sees a filesystem of about {@code bytes} */
  private String check(long bytes) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.addAll(List.of("df", "-P", "-k", mountPoint.toString()));
    String out = run(cmd);
    List<String> lines = out.lines().toList();
    if (lines.size() < 2) {
      return out.strip();
    }
    String[] f = lines.get(1).trim().split("\\s+");
    try {
      long kb = Long.parseLong(f[1]);
      return Math.abs(kb * 1024 - bytes) <= bytes / 10 + 65536 ? null : "df shows " + kb + " KiB: " + lines.get(1);
    } catch (RuntimeException e) {
      return out.strip();
    }
  }

  private static String run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException(cmd + " timed out");
    }
    return p.exitValue() == 0 ? out : "exit " + p.exitValue() + ": " + out.strip();
  }

  @Override
  public void close() throws InterruptedException {
    if (holder != null) {
      holder.destroyForcibly(); // the namespace, and its mount, go with the last process in it
      holder.waitFor(10, TimeUnit.SECONDS);
      return;
    }
    try {
      String out = run(List.of("umount", mountPoint.toString()));
      if (out.startsWith("exit ")) {
        run(List.of("umount", "-l", mountPoint.toString()));
      }
    } catch (IOException e) {
      // reported by the caller's cleanup when the directory cannot be removed
    }
  }
}
