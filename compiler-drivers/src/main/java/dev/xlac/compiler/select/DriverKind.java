package dev.xlac.compiler.select;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The compilers xlac can drive, by the name {@code --driver} takes. A new driver is one more
 * constant here, one more {@link DriverSpec} record and one more case in {@link Drivers}' switches
 * (the compiler then says where one is missing).
 */
public enum DriverKind {
  /** A PJRT plugin (XLA's CPU/GPU compilers, ...), each worker in its own JVM. */
  PJRT("pjrt", 2L << 30),
  /** AWS Neuron's {@code neuronx-cc}, found on PATH; it budgets about 64 GB per compile. */
  NEURONX_CC("neuronx-cc", 64L << 30);

  private final String cliName;
  private final long memoryPerJob;

  DriverKind(String cliName, long memoryPerJob) {
    this.cliName = cliName;
    this.memoryPerJob = memoryPerJob;
  }

  /** The name {@code --driver} takes. */
  public String cliName() {
    return cliName;
  }

  /** The expected peak memory of one compile, for the default job count and admission. */
  public long memoryPerJob() {
    return memoryPerJob;
  }

  /** The kind named {@code name}, if there is one. */
  public static Optional<DriverKind> find(String name) {
    return Arrays.stream(values()).filter(k -> k.cliName.equals(name)).findFirst();
  }

  /** The kind named {@code name}; an unknown name is a usage error that lists the known ones. */
  public static DriverKind parse(String name) {
    return find(name).orElseThrow(() -> new XlacException(ExitCode.BAD_INPUT, "unknown --driver '" + name
        + "' (expected " + Arrays.stream(values()).map(DriverKind::cliName).collect(Collectors.joining(" or ")) + ")"));
  }

  /** The default memory per job of the driver named {@code name}; pjrt's for a name that is not a driver. */
  public static long memoryPerJob(String name) {
    return find(name).orElse(PJRT).memoryPerJob();
  }
}
