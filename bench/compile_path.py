"""The seconds a JAX script spends in its compile path: runs SCRIPT (as `python SCRIPT ARGS...` would) with a
listener on JAX's own backend-compile event, which times `compile_or_get_cached` (the persistent cache's key,
read and deserialization when it is on, the PJRT compile, or the served compile behind xlac's proxy), and
prints 'compile_path_seconds compiles' at the end. Used by bench/runtime.sh to show what any cache can save
at most: the time to the first step less this.

    python bench/compile_path.py SCRIPT ARGS...
"""
import os
import runpy
import sys

from jax import monitoring

EVENT = "/jax/core/compile/backend_compile_duration"
total = [0.0, 0]


def listen(event, seconds, **_):
    if event == EVENT:
        total[0] += seconds
        total[1] += 1


def main():
    monitoring.register_event_duration_secs_listener(listen)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` has it
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.stderr.write(f"compile_path {total[0]:.4f} {total[1]}\n")


if __name__ == "__main__":
    main()
