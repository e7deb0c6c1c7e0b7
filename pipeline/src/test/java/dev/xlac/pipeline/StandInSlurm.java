package dev.xlac.pipeline;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/**
 * Stand-ins for Slurm's commands in a test's directory: shell scripts in {@code bin} (put first on the PATH the
 * submitter is given) that keep what they were asked in {@code state} ({@code $S} in a script); job ids count from
 * 100 ({@code state/next}).
 */
public record StandInSlurm(Path state, Path bin) {
  public static StandInSlurm create(Path tmp) throws Exception {
    StandInSlurm s = new StandInSlurm(Files.createDirectories(tmp.resolve("state")),
        Files.createDirectories(tmp.resolve("bin")));
    Files.writeString(s.state.resolve("next"), "100\n");
    return s;
  }

  /** Writes the command {@code name}: {@code S} names the state directory, then {@code body}. */
  public void script(String name, String body) throws Exception {
    Path f = bin.resolve(name);
    Files.writeString(f, "#!/bin/sh\nS='" + state + "'\n" + body);
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** The lines of a state file ({@code sbatch.log}, {@code cancelled}); none when it is not there. */
  public List<String> lines(String file) throws Exception {
    Path f = state.resolve(file);
    return Files.exists(f) ? Files.readAllLines(f) : List.of();
  }

  /** A PATH with the stand-ins first. */
  public String path() {
    return bin + ":" + System.getenv("PATH");
  }
}
