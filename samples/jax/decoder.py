"""Train a tiny llama-style decoder-only transformer with plain JAX.

An ordinary JAX training script: a 2-layer decoder with RMSNorm, rotary
position embeddings (RoPE), causal multi-head self-attention and a SwiGLU MLP,
trained with next-token cross-entropy on synthetic token sequences using a
hand-written AdamW. Each step is one jitted function. Prints the loss of every
step and a final summary line.

    python samples/jax/decoder.py --steps 3 --batch-size 8 --seq-len 64
"""

import argparse
import functools
import math

import jax
import jax.numpy as jnp

NORM_EPS = 1e-6
ROPE_THETA = 10000.0


# ----------------------------------------------------------------- model ---

def init_params(key, vocab, d_model, n_layers, n_heads, d_ff, tie_embeddings):
    del n_heads  # head count only changes how the projections are reshaped

    def dense(k, fan_in, fan_out):
        return jax.random.normal(k, (fan_in, fan_out), jnp.float32) / math.sqrt(fan_in)

    keys = iter(jax.random.split(key, 2 + 7 * n_layers))
    params = {
        "embed": jax.random.normal(next(keys), (vocab, d_model), jnp.float32) * 0.02,
        "final_norm": jnp.ones((d_model,), jnp.float32),
        "layers": [],
    }
    for _ in range(n_layers):
        params["layers"].append({
            "attn_norm": jnp.ones((d_model,), jnp.float32),
            "wq": dense(next(keys), d_model, d_model),
            "wk": dense(next(keys), d_model, d_model),
            "wv": dense(next(keys), d_model, d_model),
            "wo": dense(next(keys), d_model, d_model),
            "mlp_norm": jnp.ones((d_model,), jnp.float32),
            "w_gate": dense(next(keys), d_model, d_ff),
            "w_up": dense(next(keys), d_model, d_ff),
            "w_down": dense(next(keys), d_ff, d_model),
        })
    lm_head_key = next(keys)
    if not tie_embeddings:
        params["lm_head"] = dense(lm_head_key, d_model, vocab)
    return params


def rms_norm(x, weight):
    var = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(var + NORM_EPS) * weight


def rope_tables(seq_len, head_dim):
    inv_freq = 1.0 / (ROPE_THETA ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    angles = jnp.arange(seq_len, dtype=jnp.float32)[:, None] * inv_freq[None, :]
    return jnp.cos(angles), jnp.sin(angles)  # [seq, head_dim // 2]


def apply_rope(x, cos, sin):
    # x: [batch, seq, heads, head_dim]; rotate (even, odd) pairs.
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    rotated = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return rotated.reshape(x.shape)


def attention(layer, x, cos, sin, n_heads):
    batch, seq, d_model = x.shape
    head_dim = d_model // n_heads

    def heads(w):
        return (x @ w).reshape(batch, seq, n_heads, head_dim)

    q = apply_rope(heads(layer["wq"]), cos, sin)
    k = apply_rope(heads(layer["wk"]), cos, sin)
    v = heads(layer["wv"])
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(head_dim)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(causal[None, None], scores, jnp.finfo(scores.dtype).min)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, seq, d_model)
    return out @ layer["wo"]


def swiglu(layer, x):
    return (jax.nn.silu(x @ layer["w_gate"]) * (x @ layer["w_up"])) @ layer["w_down"]


def forward(params, tokens, n_heads):
    seq = tokens.shape[1]
    d_model = params["embed"].shape[1]
    cos, sin = rope_tables(seq, d_model // n_heads)
    h = params["embed"][tokens]
    for layer in params["layers"]:
        h = h + attention(layer, rms_norm(h, layer["attn_norm"]), cos, sin, n_heads)
        h = h + swiglu(layer, rms_norm(h, layer["mlp_norm"]))
    h = rms_norm(h, params["final_norm"])
    lm_head = params["lm_head"] if "lm_head" in params else params["embed"].T
    return h @ lm_head


def loss_fn(params, tokens, n_heads):
    logits = forward(params, tokens[:, :-1], n_heads)
    targets = tokens[:, 1:]
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)
    return jnp.mean(nll)


# ------------------------------------------------------------- optimizer ---

def adamw_init(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "step": jnp.zeros((), jnp.int32)}


def adamw_update(params, grads, state, lr, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1):
    step = state["step"] + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    t = step.astype(jnp.float32)
    m_scale = 1.0 / (1 - b1 ** t)
    v_scale = 1.0 / (1 - b2 ** t)

    def update(p, m, v):
        decay = weight_decay * p if p.ndim >= 2 else 0.0  # no decay on norm gains
        return p - lr * ((m * m_scale) / (jnp.sqrt(v * v_scale) + eps) + decay)

    new_params = jax.tree_util.tree_map(update, params, m, v)
    return new_params, {"m": m, "v": v, "step": step}


@functools.partial(jax.jit, static_argnames=("n_heads", "lr"))
def train_step(params, opt_state, tokens, n_heads, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, n_heads)
    params, opt_state = adamw_update(params, grads, opt_state, lr)
    return params, opt_state, loss


# ------------------------------------------------------------------ data ---

def synthetic_tokens(key, batch, seq_len, vocab):
    """Learnable sequences: each row counts up by a per-row stride mod vocab."""
    k_start, k_stride = jax.random.split(key)
    start = jax.random.randint(k_start, (batch, 1), 0, vocab)
    stride = jax.random.randint(k_stride, (batch, 1), 1, 8)
    return (start + stride * jnp.arange(seq_len)[None, :]) % vocab


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-heads", type=int, default=4)
    parser.add_argument("--n-layers", type=int, default=2)
    parser.add_argument("--d-ff", type=int, default=None,
                        help="MLP width (default: 8/3 * d_model rounded up to a multiple of 32)")
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--untied", action="store_true",
                        help="use a separate lm_head instead of the tied embedding matrix")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss-bits", action="store_true",
                        help="also print each loss exactly (float.hex), to compare runs bit for bit")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="dtype of the parameters and optimizer state (the training step's inputs)")
    args = parser.parse_args()
    if args.d_model % args.n_heads or (args.d_model // args.n_heads) % 2:
        parser.error("--d-model must be divisible by --n-heads with an even head dim")
    d_ff = args.d_ff or 32 * math.ceil(8 * args.d_model / 3 / 32)

    key = jax.random.PRNGKey(args.seed)
    k_params, k_data = jax.random.split(key)
    params = init_params(k_params, args.vocab, args.d_model, args.n_layers, args.n_heads,
                         d_ff, tie_embeddings=not args.untied)
    if args.dtype != "float32":
        params = jax.tree_util.tree_map(lambda p: p.astype(args.dtype), params)
    opt_state = adamw_init(params)
    tokens = synthetic_tokens(k_data, args.batch_size, args.seq_len + 1, args.vocab)

    loss = None
    for step in range(1, args.steps + 1):
        params, opt_state, loss = train_step(params, opt_state, tokens,
                                             n_heads=args.n_heads, lr=args.lr)
        bits = f" bits {float(loss).hex()}" if args.loss_bits else ""
        print(f"step {step} loss {float(loss):.6f}{bits}", flush=True)
    final = float(loss) if loss is not None else float("nan")
    print(f"done: decoder steps={args.steps} batch_size={args.batch_size} "
          f"seq_len={args.seq_len} d_model={args.d_model} vocab={args.vocab} "
          f"tied={not args.untied} final_loss={final:.6f}", flush=True)


if __name__ == "__main__":
    main()
