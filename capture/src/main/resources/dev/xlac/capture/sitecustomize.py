# Written by `xlac dump` into a temporary directory that it puts first on PYTHONPATH.
#
# XLA's --xla_dump_to names one directory for every process, and its file names restart at
# module_0000 in each process, so the workers of a multi-process run (torchrun, xmp.spawn) would
# overwrite each other's dumps. Python imports this module at interpreter start, before any
# framework reads XLA_FLAGS, so it gives this process its own directory: $XLAC_DUMP_BASE/pid-<pid>.
# A process forked later gets its own directory too (os.register_at_fork). Then it runs the
# sitecustomize module that this one shadows, if there is one, as Python would have.
import os
import sys


def _xlac_own_dump_dir():
    base = os.environ.get("XLAC_DUMP_BASE")
    if not base:
        return
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_dump_to=")]
    flags.append("--xla_dump_to=" + os.path.join(base, "pid-%d" % os.getpid()))
    os.environ["XLA_FLAGS"] = " ".join(flags)


def _xlac_chain():
    import importlib.machinery
    import importlib.util

    # Only the entries after this one's directory: a sitecustomize found there that chains the same way
    # (xlac run's, under a recording) never finds this one again.
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(p or os.curdir) for p in sys.path]
    if here not in entries:
        return
    rest = sys.path[entries.index(here) + 1:]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _xlac_own_dump_dir()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_xlac_own_dump_dir)
except Exception as e:  # never break the user's program; its dumps then share the base directory
    print("xlac: sitecustomize: %s" % e, file=sys.stderr)

_xlac_chain()
