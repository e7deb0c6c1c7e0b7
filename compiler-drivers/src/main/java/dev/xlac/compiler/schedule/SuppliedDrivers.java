package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import java.util.function.Supplier;

/**
 * {@link DriverFactory#of}: a known identity, a supplier of drivers, an optional driver already open for the first
 * {@link #open()}, and at most one {@link SpareDriver}.
 */
final class SuppliedDrivers implements DriverFactory {
  private final CompilerIdentity identity;
  private final Supplier<? extends CompilerDriver> open;
  private final SpareDriver<CompilerDriver> spare;
  private CompilerDriver first; // guarded by this; null once taken or closed

  SuppliedDrivers(CompilerIdentity identity, Supplier<? extends CompilerDriver> open, CompilerDriver first) {
    this.identity = identity;
    this.open = open;
    this.spare = new SpareDriver<>("xlac-driver-prestart", open);
    this.first = first;
  }

  @Override
  public CompilerIdentity identity() {
    return identity;
  }

  @Override
  public void prestart() {
    synchronized (this) {
      if (first != null) {
        return; // the next open() is served already
      }
    }
    spare.startIfNone();
  }

  @Override
  public CompilerDriver open() {
    CompilerDriver d = takeFirst();
    if (d != null) {
      return d;
    }
    WarmDriver<CompilerDriver> s = spare.take();
    return s == null ? open.get() : s.take();
  }

  @Override
  public void close() {
    CompilerDriver d = takeFirst();
    if (d != null) {
      d.close();
    }
    spare.close();
  }

  private synchronized CompilerDriver takeFirst() {
    CompilerDriver d = first;
    first = null;
    return d;
  }
}
