"""Train a small MLP classifier on synthetic data with plain JAX.

An ordinary JAX training script: parameters and data come from a fixed PRNG
seed, and each step (forward pass, softmax cross-entropy loss with an L2
penalty, gradients, global-norm clipping, hand-written Adam update) is one
jitted function. Prints the loss of every step and a final summary line.

    python samples/jax/mlp.py --steps 5 --batch-size 32 --hidden 128
"""

import argparse
import functools

import jax
import jax.numpy as jnp

IN_FEATURES = 32
NUM_CLASSES = 10
WEIGHT_DECAY = 1e-4  # L2 penalty on the weights
MAX_GRAD_NORM = 1.5  # global-norm gradient clipping threshold
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8


def init_params(key, in_dim, hidden, out_dim):
    """Two hidden layers with He-style initialisation."""
    sizes = [in_dim, hidden, hidden, out_dim]
    keys = jax.random.split(key, len(sizes) - 1)
    params = []
    for k, fan_in, fan_out in zip(keys, sizes[:-1], sizes[1:]):
        w = jax.random.normal(k, (fan_in, fan_out), jnp.float32) * jnp.sqrt(2.0 / fan_in)
        b = jnp.zeros((fan_out,), jnp.float32)
        params.append({"w": w, "b": b})
    return params


def make_data(key, batch_size):
    """Synthetic classification data: labels from a fixed random linear teacher."""
    kx, kt = jax.random.split(key)
    x = jax.random.normal(kx, (batch_size, IN_FEATURES), jnp.float32)
    teacher = jax.random.normal(kt, (IN_FEATURES, NUM_CLASSES), jnp.float32)
    y = jnp.argmax(x @ teacher, axis=-1)
    return x, y


def forward(params, x):
    h = x
    for layer in params[:-1]:
        h = jax.nn.relu(h @ layer["w"] + layer["b"])
    last = params[-1]
    return h @ last["w"] + last["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))
    l2 = sum(jnp.sum(layer["w"] ** 2) for layer in params)
    return nll + WEIGHT_DECAY * l2


def init_adam(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}


@functools.partial(jax.jit, static_argnames=("lr",))
def train_step(params, opt_state, x, y, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    leaves = jax.tree_util.tree_leaves(grads)
    grad_norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
    clip = jnp.minimum(1.0, MAX_GRAD_NORM / (grad_norm + 1e-6))
    grads = jax.tree_util.tree_map(lambda g: g * clip, grads)
    t = opt_state["t"] + 1
    m = jax.tree_util.tree_map(lambda m, g: BETA1 * m + (1 - BETA1) * g, opt_state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: BETA2 * v + (1 - BETA2) * g * g, opt_state["v"], grads)
    tf = t.astype(jnp.float32)
    bc1 = 1 - BETA1 ** tf
    bc2 = 1 - BETA2 ** tf
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * (m / bc1) / (jnp.sqrt(v / bc2) + EPS), params, m, v)
    return params, {"m": m, "v": v, "t": t}, loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    key = jax.random.PRNGKey(args.seed)
    kparams, kdata = jax.random.split(key)
    params = init_params(kparams, IN_FEATURES, args.hidden, NUM_CLASSES)
    opt_state = init_adam(params)
    x, y = make_data(kdata, args.batch_size)

    loss = None
    for step in range(1, args.steps + 1):
        params, opt_state, loss = train_step(params, opt_state, x, y, lr=args.lr)
        print(f"step {step} loss {float(loss):.6f}", flush=True)
    final = float(loss) if loss is not None else float("nan")
    print(f"done: mlp steps={args.steps} batch_size={args.batch_size} "
          f"hidden={args.hidden} final_loss={final:.6f}", flush=True)


if __name__ == "__main__":
    main()
