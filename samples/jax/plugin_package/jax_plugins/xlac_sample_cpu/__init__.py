"""A JAX plugin package, as jax[cuda] or jax-neuronx install theirs: JAX imports every module of the
`jax_plugins` namespace package and calls its initialize(), which registers a PJRT plugin under its own
name. This one registers the CPU plugin named by $XLAC_SAMPLE_CPU_PLUGIN as the platform "samplecpu",
with two devices. Put samples/jax/plugin_package on PYTHONPATH and select it with JAX_PLATFORMS=samplecpu.
"""
import os


def initialize():
    library = os.environ.get("XLAC_SAMPLE_CPU_PLUGIN")
    if not library:
        return
    from jax._src import xla_bridge

    xla_bridge.register_plugin("samplecpu", library_path=library, options={"cpu_device_count": 2})
