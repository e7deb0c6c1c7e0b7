"""`xlac dump`: each Python process dumps into a directory of its own.

XLA's --xla_dump_to names one directory for every process, and its file names restart at module_0000
in each process, so the workers of a multi-process run (torchrun, xmp.spawn) would overwrite each
other's dumps. At interpreter start, before any framework reads XLA_FLAGS, this process's dump
directory becomes $XLAC_DUMP_BASE/pid-<pid>; a process forked later gets its own too.
"""
import os


def _own_dump_dir():
    base = os.environ.get("XLAC_DUMP_BASE")
    if not base:
        return
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_dump_to=")]
    flags.append("--xla_dump_to=" + os.path.join(base, "pid-%d" % os.getpid()))
    os.environ["XLA_FLAGS"] = " ".join(flags)


def install():
    if not os.environ.get("XLAC_DUMP_BASE"):
        return
    _own_dump_dir()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_own_dump_dir)
