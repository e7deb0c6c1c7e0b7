# Put first on the command's PYTHONPATH by `xlac run`, `xlac dump` and recording runs, from a directory
# named by the hash of these files. Python imports this module at interpreter start, before the command
# imports any framework. It installs xlac's hooks, each of which acts only when its variables are set:
# _xlac_dump gives each process its own dump directory; _xlac_jax puts xlac's PJRT proxy where JAX
# loads the real plugin, under the plugin's own name; _xlac_torch_xla does the same through torch_xla's
# device-plugin registry. A hook that fails says so in one line and leaves its framework as it is: the
# command then runs as without xlac, never broken. Then the sitecustomize module that this one shadows
# runs, if there is one, as Python would have.
import os
import sys


def _xlac_install():
    import importlib
    import importlib.util

    for name in ("_xlac_dump", "_xlac_jax", "_xlac_torch_xla"):
        try:
            if importlib.util.find_spec(name) is None:
                continue
            importlib.import_module(name).install()
        except Exception as e:  # never break the user's program
            print("xlac: %s: %s; left out" % (name, e), file=sys.stderr)


def _xlac_chain():
    # Only the entries after this one's directory: this one is never found again.
    import importlib.machinery
    import importlib.util

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


_xlac_install()
_xlac_chain()
