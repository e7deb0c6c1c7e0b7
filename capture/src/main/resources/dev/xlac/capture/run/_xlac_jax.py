"""JAX under `xlac run`: xlac's PJRT proxy takes the real plugin's place, under the plugin's name.

JAX loads every PJRT plugin that has a path through one function, jaxlib's
xla_client.load_pjrt_plugin_dynamically(name, path): plugins registered by `jax_plugins` packages and
entry points (jax[cuda], jax-neuronx), PJRT_NAMES_AND_LIBRARY_PATHS pairs and their .json form, and
libtpu through TPU_LIBRARY_PATH. When the path is the real plugin that xlac serves
($XLAC_PJRT_REAL_PLUGIN, compared as a file), the proxy ($XLAC_PJRT_PROXY) is loaded in its place,
under the same name, with the same options: the backend, its platform, jax.devices(NAME),
jit(backend=NAME), JAX_PLATFORMS and JAX's warnings are what they are without xlac.

JAX's own CPU client loads no plugin. When the real plugin is not loaded under a name of its own by
the time JAX creates its "cpu" backend, the proxy (in front of a CPU plugin) stands in for that client,
under the name "cpu", registered as JAX registered its own (not experimental, the same priority). If
the plugin turns out not to be a CPU plugin, JAX's own CPU client is used, with one line saying so.

Nothing here imports JAX: the work is done right after JAX's own modules are imported.
"""
import functools
import os
import sys

_PROXY = "XLAC_PJRT_PROXY"
_REAL = "XLAC_PJRT_REAL_PLUGIN"
# The name the stand-in loads the proxy under in jaxlib's plugin table; JAX's backend is still "cpu".
_STAND_IN_PLUGIN = "xlac_cpu"

_fronted = []  # the names JAX loaded the real plugin under, through the proxy
_installed = []


def install():
    proxy = os.environ.get(_PROXY)
    real = os.environ.get(_REAL)
    if not proxy or not real or _installed:
        return
    try:
        real_file = _file_of(real)
    except OSError as e:
        raise RuntimeError("cannot read the real plugin %s (%s)" % (real, e.strerror))
    from _xlac_after_import import when_imported

    _installed.append(True)
    when_imported("jaxlib.xla_client", lambda m: _front_the_plugin(m, proxy, real_file),
                  lambda why: _say(why, "the plugins JAX loads run unserved"))
    when_imported("jax._src.xla_bridge", lambda m: _stand_in_for_cpu(m, proxy, real_file),
                  lambda why: _say(why, "JAX's own CPU client runs unserved"))


def _say(why, outcome):
    print("xlac: cannot put xlac's proxy into JAX (%s); %s" % (why, outcome), file=sys.stderr)


def _file_of(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def _is_the_real_plugin(path, real_file):
    try:
        return path is not None and _file_of(os.fspath(path)) == real_file
    except (OSError, TypeError, ValueError):
        return False  # a bare library name (dlopen searches for it) or no file: not the plugin xlac serves


def _front_the_plugin(xla_client, proxy, real_file):
    original = xla_client.load_pjrt_plugin_dynamically

    @functools.wraps(original)
    def load_pjrt_plugin_dynamically(plugin_name, library_path, *args, **kwargs):
        if not _is_the_real_plugin(library_path, real_file):
            return original(plugin_name, library_path, *args, **kwargs)
        try:
            c_api = original(plugin_name, proxy, *args, **kwargs)
        except Exception as e:  # the proxy cannot be loaded here: the plugin as without xlac
            print("xlac: cannot load xlac's proxy %s as JAX's plugin %s (%s); it runs unserved"
                  % (proxy, plugin_name, e), file=sys.stderr)
            return original(plugin_name, library_path, *args, **kwargs)
        _fronted.append(plugin_name)
        return c_api

    xla_client.load_pjrt_plugin_dynamically = load_pjrt_plugin_dynamically


def _stand_in_for_cpu(xla_bridge, proxy, real_file):
    import dataclasses

    registration = xla_bridge._backend_factories.get("cpu")
    if registration is None:
        raise RuntimeError("this JAX registers no 'cpu' backend at import")
    own = registration.factory

    def factory(*args, **kwargs):
        if _fronted or args or kwargs or _tpu_will_load(xla_bridge, real_file):
            return own(*args, **kwargs)  # the plugin runs under its own name: JAX's CPU stays JAX's
        xla_client = xla_bridge.xla_client
        load = getattr(xla_client.load_pjrt_plugin_dynamically, "__wrapped__",
                       xla_client.load_pjrt_plugin_dynamically)
        try:
            if not xla_client.pjrt_plugin_loaded(_STAND_IN_PLUGIN):
                load(_STAND_IN_PLUGIN, proxy)
            # As many devices as JAX's own CPU client makes (a CPU plugin's default is its own).
            client = xla_bridge.make_pjrt_c_api_client(
                _STAND_IN_PLUGIN, options={"cpu_device_count": _cpu_device_count(xla_bridge)})
        except Exception as e:
            print("xlac: the plugin %s cannot stand in for JAX's CPU client (%s); JAX's own CPU client runs"
                  " unserved" % (os.environ.get(_REAL), e), file=sys.stderr)
            return own()
        if client.platform != "cpu":
            print("xlac: the plugin %s is a %s plugin, which this command does not load; JAX's own CPU client"
                  " runs unserved" % (os.environ.get(_REAL), client.platform), file=sys.stderr)
            return own()
        return client

    xla_bridge._backend_factories["cpu"] = dataclasses.replace(registration, factory=factory)


def _tpu_will_load(xla_bridge, real_file):
    """Whether JAX's "tpu" backend, created after "cpu", is to load the plugin (libtpu: TPU_LIBRARY_PATH, else the
    libtpu package's library), so that JAX's CPU client must stay JAX's."""
    if "tpu" not in xla_bridge._backend_factories:
        return False
    platforms = os.environ.get("JAX_PLATFORMS", "")
    try:
        platforms = xla_bridge.config.jax_platforms.value or ""
    except Exception:
        pass
    if platforms and "tpu" not in platforms.split(","):
        return False
    path = os.environ.get("TPU_LIBRARY_PATH")
    if not (path and os.path.isfile(path)):
        try:
            import importlib.util

            if importlib.util.find_spec("libtpu") is None:
                return False
            import libtpu

            path = libtpu.get_library_path()
        except Exception:
            return False
    return _is_the_real_plugin(path, real_file)


def _cpu_device_count(xla_bridge):
    """What JAX's own CPU client is given: jax_num_cpu_devices, else XLA's host device count flag, else 1."""
    configured = getattr(xla_bridge, "num_cpu_devices", None)
    if configured is not None and configured.value >= 0:
        return configured.value
    count = 1
    for flag in os.environ.get("XLA_FLAGS", "").split():
        if flag.startswith("--xla_force_host_platform_device_count="):
            try:
                count = int(flag.split("=", 1)[1])
            except ValueError:
                pass
    return count
