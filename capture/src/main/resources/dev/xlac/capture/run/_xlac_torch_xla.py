"""Puts xlac's runtime proxy in the real PJRT plugin's place through torch_xla's own device-plugin registry.

torch_xla (2.9) loads a device's plugin through the DevicePlugin registered for PJRT_DEVICE
(`torch_xla.experimental.plugins`, filled from the `torch_xla.plugins` entry points at import); its
launchers (torch_xla.launch, xmp.spawn, torchrun's initialisation) ask the same registry for the
device's process topology. So the proxy goes where the registry hands out the library path, and the
device type and every other answer of the real DevicePlugin stay as they are:

- XLAC_TORCH_XLA_DEVICE (TPU, NEURON, CUDA, ...): each DevicePlugin registered under that name has
  its library_path() answered with the proxy, XLAC_PJRT_PROXY.
- XLAC_TORCH_XLA_DEVICE=LIBRARY: torch_xla's built-in CPU client loads no plugin, so xlac runs a CPU
  command as PJRT_DEVICE=LIBRARY (PJRT_LIBRARY_PATH=proxy), which torch_xla's C++ runtime knows but
  its Python registry does not; a stand-in DevicePlugin that answers as the CPU client's launch path
  does (one process, nothing to configure) is registered for it.

install() runs at interpreter start and imports nothing of torch's: it waits, on sys.meta_path, for
torch_xla to import its plugin registry. It never raises; a failure is one `xlac:` line on stderr
and torch_xla is left as it is.
"""

import os
import sys

_REGISTRY_MODULE = "torch_xla.experimental.plugins"
_DEVICE = "XLAC_TORCH_XLA_DEVICE"
_PROXY = "XLAC_PJRT_PROXY"


def _say(reason):
    print("xlac: torch_xla's device-plugin registry is left as it is (its plugin is not served): %s" % reason,
          file=sys.stderr)


def _front(plugin, proxy):
    """The same plugin object, asked for its library by torch_xla's C++ runtime through the pybind11
    trampoline, which looks the method up on the instance: an instance attribute answers first."""
    plugin.library_path = lambda: proxy
    return plugin


def _cpu_stand_in(plugins):
    class XlacCpuStandIn(plugins.DevicePlugin):
        """What torch_xla's launchers do for its built-in CPU client: one process, nothing to configure,
        and CPU_NUM_DEVICES devices, 1 unless set (a CPU plugin's own default is one per core)."""

        def library_path(self):
            return os.environ[_PROXY]

        def configure_single_process(self):
            pass

        def physical_chip_count(self):
            return 1

        def client_create_options(self):
            count = os.environ.get("CPU_NUM_DEVICES", "").strip()
            return {"cpu_device_count": int(count) if count.isdigit() else 1}

    return XlacCpuStandIn()


def _patch_registry(plugins):
    device = os.environ.get(_DEVICE, "").strip().upper()
    proxy = os.environ.get(_PROXY, "")
    if not device or not proxy:
        return
    registry = plugins._plugin_registry
    register = plugins.register_plugin

    def register_plugin(name, device_plugin):
        if name.upper() == device:
            try:
                device_plugin = _front(device_plugin, proxy)
            except Exception as e:  # this plugin keeps its library; torch_xla's registration goes on
                _say("cannot front %s's plugin: %s: %s" % (device, type(e).__name__, e))
        return register(name, device_plugin)

    register_plugin.__doc__ = register.__doc__
    plugins.register_plugin = register_plugin
    # A plugin registered before this module finished (none in torch_xla 2.9) is fronted too.
    known = registry.get(device)
    if known is not None:
        register_plugin(device, known)
    elif device == "LIBRARY":
        register_plugin(device, _cpu_stand_in(plugins))


class _AfterRegistryImport:
    """A meta-path finder that lets the real finder load torch_xla's registry module, then patches it
    before anything else (torch_xla's own entry-point registration included) can use it."""

    def find_spec(self, name, path=None, target=None):
        if name != _REGISTRY_MODULE:
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
                _say("%s has no loader to follow" % name)
                return None
            spec.loader = _PatchingLoader(spec.loader)
            return spec
        except Exception as e:  # Python's own import then goes on without us
            _say("%s: %s" % (type(e).__name__, e))
            return None


class _PatchingLoader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _patch_registry(module)
        except Exception as e:  # never the reason the command fails
            _say("%s: %s" % (type(e).__name__, e))

    def __getattr__(self, name):
        return getattr(self._loader, name)


def install():
    try:
        if not os.environ.get(_DEVICE) or not os.environ.get(_PROXY):
            return
        module = sys.modules.get(_REGISTRY_MODULE)
        if module is not None:  # imported before us (a sitecustomize earlier on the path)
            _patch_registry(module)
            return
        if not any(isinstance(f, _AfterRegistryImport) for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterRegistryImport())
    except Exception as e:
        _say("%s: %s" % (type(e).__name__, e))
