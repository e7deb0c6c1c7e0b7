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


_installed = []


def install():
    try:
        if not os.environ.get(_DEVICE) or not os.environ.get(_PROXY) or _installed:
            return
        from _xlac_after_import import when_imported

        _installed.append(True)
        # Patched before anything else (torch_xla's own entry-point registration included) can use it; at once
        # when it was imported before us (a sitecustomize earlier on the path).
        when_imported(_REGISTRY_MODULE, _patch_registry, _say)
    except Exception as e:
        _say("%s: %s" % (type(e).__name__, e))
