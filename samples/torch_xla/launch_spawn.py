"""One worker per device, started by `torch_xla.launch`, as PyTorch/XLA's multi-process examples are.

`torch_xla.launch` asks the device plugin registered for `PJRT_DEVICE` how many processes to start
and how to set each one up, then runs `train(index, args)` in each. The worker trains on its shard
of every batch; `xm.optimizer_step` all-reduces the gradients over the workers before the step, and
the loss is printed from a step closure, once per worker. On CPU there is one worker.

    PJRT_DEVICE=CPU python samples/torch_xla/launch_spawn.py --steps 3
"""

import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset

from common import Mlp, loss_text, synthetic_batches


def train(index, args):
    torch.manual_seed(args.seed)
    device = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    model = Mlp(args.hidden).to(device)
    xm.broadcast_master_param(model)  # the same start on every worker
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * world, momentum=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()

    batches = synthetic_batches(args.steps, args.batch_size * world, args.seed)
    xs = torch.cat([x.chunk(world)[rank] for x, _ in batches])
    ys = torch.cat([y.chunk(world)[rank] for _, y in batches])
    loader = pl.MpDeviceLoader(DataLoader(TensorDataset(xs, ys), batch_size=args.batch_size), device)

    def report(step, loss):
        print(f"worker {index} step {step} loss {loss_text(loss, args.loss_bits)}", flush=True)

    for step, (x, y) in enumerate(loader):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        xm.optimizer_step(opt)
        xm.add_step_closure(report, args=(step, loss))
    xm.master_print(f"done: {args.steps} steps on {world} worker(s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16, help="per worker")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loss-bits", action="store_true",
                    help="also print each loss's exact bits (float.hex), to compare runs bit for bit")
    args = ap.parse_args()
    torch_xla.launch(train, args=(args,))


if __name__ == "__main__":
    main()
