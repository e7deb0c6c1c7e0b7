"""Data-parallel training with one process per worker, launched by torchrun.

Each worker trains a replica of the model on its own XLA device and its own shard of the batch; the
gradients are averaged across workers, then every replica takes the same optimizer step. On TPU or
GPU the average would be `xm.all_reduce` over the `xla` process group, but XLA's CPU client serves
one process only (there every worker is a world of one), so on CPU the gradients are averaged with
the `gloo` process group that torchrun's environment sets up.

    PJRT_DEVICE=CPU torchrun --nproc_per_node=2 samples/torch_xla/torchrun_ddp.py --steps 2
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch_xla

from common import Mlp, loss_text, synthetic_batches


def say(line):
    """One line in one write(2): the workers share stdout, and a line printed in two writes (its text, then
    its newline) can have the other worker's line land between them."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loss-bits", action="store_true",
                    help="also print each loss's exact bits (float.hex), to compare runs bit for bit")
    args = ap.parse_args()

    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR/PORT come from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial weights on every worker
    device = torch_xla.device()
    model = Mlp(args.hidden).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()

    loss = None
    for step, (x, y) in enumerate(synthetic_batches(args.steps, args.batch_size, args.seed)):
        x, y = x.chunk(world)[rank].to(device), y.chunk(world)[rank].to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        for p in model.parameters():
            g = p.grad.cpu()
            dist.all_reduce(g)
            p.grad.copy_((g / world).to(device))
        opt.step()
        torch_xla.sync()
        say(f"rank {rank}/{world} step {step} loss {loss_text(loss, args.loss_bits)}")
    say(f"rank {rank} done: {args.steps} steps, final loss {loss_text(loss, args.loss_bits)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
