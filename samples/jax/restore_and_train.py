"""Restore a pretrained tower, read a data shard, then fine-tune a small decoder with plain JAX.

What real training scripts do before their first step, around the decoder of
decoder.py: build a frozen pretrained tower of a few hundred MB of parameters on
the host (as a checkpoint restore does) and put it on the device, read a shard of
uint16 tokens from a file, check the tower with one jitted reduction, and only
then trace and run the training step on sequences cut from the shard. About a second
of host work before the first compile on a laptop-class CPU; prints the loss of
every step and a final summary line, as decoder.py.

    python samples/jax/restore_and_train.py --shard tokens.u16 --tower-mb 300 --steps 3

Without --shard it writes a shard of --shard-mb MB of synthetic tokens to a
temporary file first (outside the timing that matters to a benchmark, which
passes its own).
"""

import argparse
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from decoder import adamw_init, init_params, train_step


def build_tower(mb, seed):
    """A frozen tower of `mb` MB of float32 weights, initialised on the host, in 16 MB matrices."""
    rng = np.random.default_rng(seed)
    rows = 4096
    cols = 1024  # 4096 x 1024 float32: 16 MB
    n = max(1, round(mb / 16))
    return [jax.device_put(rng.standard_normal((rows, cols), dtype=np.float32) / math.sqrt(cols))
            for _ in range(n)]


@jax.jit
def tower_checksum(tower):
    return sum(jnp.sum(w * w) for w in tower)


def write_shard(path, mb, vocab, seed):
    rng = np.random.default_rng(seed)
    start = rng.integers(0, vocab, size=(mb << 19) // 64, dtype=np.int64)[:, None]
    stride = rng.integers(1, 8, size=start.shape, dtype=np.int64)
    tokens = (start + stride * np.arange(64)[None, :]) % vocab
    tokens.astype(np.uint16).tofile(path)


def batches(shard, batch, seq_len, vocab):
    """Consecutive (batch, seq_len + 1) windows of the shard, as a data loader hands them out."""
    window = seq_len + 1
    per_batch = batch * window
    for i in range(len(shard) // per_batch):
        chunk = shard[i * per_batch:(i + 1) * per_batch].astype(np.int32) % vocab
        yield jnp.asarray(chunk.reshape(batch, window))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tower-mb", type=int, default=300, help="size of the frozen tower (MB of float32)")
    parser.add_argument("--shard", help="file of uint16 tokens (default: write --shard-mb MB of them first)")
    parser.add_argument("--shard-mb", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=63)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss-bits", action="store_true",
                        help="also print each loss exactly (float.hex), to compare runs bit for bit")
    args = parser.parse_args()

    shard_path = args.shard
    scratch = None
    if shard_path is None:
        scratch = tempfile.NamedTemporaryFile(suffix=".u16", delete=False)
        scratch.close()
        shard_path = scratch.name
        write_shard(shard_path, args.shard_mb, args.vocab, args.seed)
    try:
        tower = build_tower(args.tower_mb, args.seed)
        shard = np.fromfile(shard_path, dtype=np.uint16)
        checksum = float(tower_checksum(tower))

        d_ff = 32 * math.ceil(8 * args.d_model / 3 / 32)
        key = jax.random.PRNGKey(args.seed)
        params = init_params(key, args.vocab, args.d_model, 2, args.n_heads, d_ff, tie_embeddings=True)
        opt_state = adamw_init(params)
        loss = None
        data = batches(shard, args.batch_size, args.seq_len, args.vocab)
        for step in range(1, args.steps + 1):
            tokens = next(data)
            params, opt_state, loss = train_step(params, opt_state, tokens, n_heads=args.n_heads, lr=args.lr)
            bits = f" bits {float(loss).hex()}" if args.loss_bits else ""
            print(f"step {step} loss {float(loss):.6f}{bits}", flush=True)
        final = float(loss) if loss is not None else float("nan")
        print(f"done: restore_and_train steps={args.steps} tower_mb={16 * len(tower)} "
              f"shard_tokens={len(shard)} tower_checksum={checksum:.1f} final_loss={final:.6f}", flush=True)
    finally:
        if scratch is not None:
            os.unlink(shard_path)


if __name__ == "__main__":
    main()
