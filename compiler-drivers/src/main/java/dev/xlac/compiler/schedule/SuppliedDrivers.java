package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import java.util.function.Supplier;

/** {@link DriverFactory#of}: a known identity, a supplier of drivers, and at most one {@link WarmDriver}. */
final class SuppliedDrivers implements DriverFactory {
  private final CompilerIdentity identity;
  private final Supplier<? extends CompilerDriver> open;
  private WarmDriver<CompilerDriver> spare;

  SuppliedDrivers(CompilerIdentity identity, Supplier<? extends CompilerDriver> open) {
    this.identity = identity;
    this.open = open;
  }

  @Override
  public CompilerIdentity identity() {
    return identity;
  }

  @Override
  public synchronized void prestart() {
    if (spare == null) {
      spare = WarmDriver.start("xlac-driver-prestart", open);
    }
  }

  @Override
  public CompilerDriver open() {
    WarmDriver<CompilerDriver> s;
    synchronized (this) {
      s = spare;
      spare = null;
    }
    return s == null ? open.get() : s.take();
  }

  @Override
  public void close() {
    WarmDriver<CompilerDriver> s;
    synchronized (this) {
      s = spare;
      spare = null;
    }
    if (s != null) {
      s.close();
    }
  }
}
