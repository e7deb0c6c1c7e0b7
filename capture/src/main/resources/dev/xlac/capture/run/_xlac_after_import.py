"""Runs a function on a module right after Python first imports it, for xlac's framework hooks.

A finder first on sys.meta_path lets the real finder find the watched module and wraps its loader:
once the module has run, each hook registered for it runs, before anything else can use the module.
Nothing is imported ahead of the command; a hook or a finder that fails says so through its `say`
and the import goes on as without xlac.
"""
import sys

_hooks = {}  # module name -> [(hook, say)]


def when_imported(name, hook, say):
    """Calls hook(module) once `name` has been imported (at once when it already is); say(reason) on failure."""
    module = sys.modules.get(name)
    if module is not None:
        _run(hook, say, module)
        return
    _hooks.setdefault(name, []).append((hook, say))
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _run(hook, say, module):
    try:
        hook(module)
    except Exception as e:  # never the reason the command fails
        say("%s: %s" % (type(e).__name__, e))


class _Finder:
    def find_spec(self, name, path=None, target=None):
        hooks = _hooks.get(name)
        if not hooks:
            return None
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                del _hooks[name]
                for _, say in hooks:
                    say("%s has no loader to follow" % name)
                return spec
            # The hooks are taken when the module has run (a spec found and not loaded, or a load that failed and is
            # tried again, leaves them for the import that succeeds).
            spec.loader = _Loader(spec.loader, name)
            return spec
        except Exception as e:  # Python's own import then goes on without the hooks
            for _, say in hooks:
                say("%s: %s" % (type(e).__name__, e))
            return None


class _Loader:
    """The module's own loader, then the hooks, once the module has run."""

    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        for hook, say in _hooks.pop(self._name, []):
            _run(hook, say, module)

    def __getattr__(self, name):
        return getattr(self._loader, name)
