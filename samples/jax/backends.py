"""Prints what a script sees of JAX's backends, then trains a few steps of a tiny linear model on the backend
it names (or the default one): what `xlac run` must leave as it is without xlac.

    python samples/jax/backends.py [--backend NAME] [--steps N]
"""
import argparse

import jax
import jax.numpy as jnp


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default=None)
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    print("default backend:", jax.default_backend())
    print("devices:", jax.devices())
    if a.backend:
        print("devices of %s:" % a.backend, jax.devices(a.backend))
    print("cpu devices:", jax.devices("cpu") if "cpu" in _backends() else "none")

    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    @jax.jit
    def step(w, x, y):
        return w - 0.1 * jax.grad(loss)(w, x, y), loss(w, x, y)

    if a.backend:
        step = jax.jit(step, backend=a.backend)
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (16, 4))
    y = x @ jnp.arange(4.0)
    w = jnp.zeros(4)
    for i in range(a.steps):
        w, l = step(w, x, y)
        print("step %d loss %.6f" % (i, float(l)))


def _backends():
    from jax._src import xla_bridge

    return xla_bridge.backends()


if __name__ == "__main__":
    main()
