"""Lazy tensor tracing: the classic PyTorch/XLA training loop.

Operations on XLA tensors are recorded, not run; `xm.mark_step()` cuts the trace, and PyTorch/XLA
compiles and runs the recorded graph. Batches reach the device through `MpDeviceLoader`, which
also calls `mark_step()` after each batch it hands out.

    PJRT_DEVICE=CPU python samples/torch_xla/lazy_mark_step.py --steps 3
"""

import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset

from common import Mlp, loss_text, synthetic_batches


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=2, help="hidden layers of the MLP")
    ap.add_argument("--seq-len", type=int, default=0,
                    help="train on token sequences of this length (embedded and averaged) instead of feature vectors")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                    help="dtype of the weights, the optimizer state and the float inputs")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--inline-scalars", action="store_true",
                    help="put Python numbers (the learning rate among them) into the graphs as constants, as"
                         " torch_xla's StableHLO export does with inline_all_constant; by default torch_xla"
                         " passes them as device data, so changing them does not change the graphs")
    ap.add_argument("--loss-bits", action="store_true",
                    help="also print each loss's exact bits (float.hex), to compare runs bit for bit")
    args = ap.parse_args()

    if args.inline_scalars:
        torch_xla._XLAC._set_xla_all_numbers_special_scalars(True)
    torch.manual_seed(args.seed)
    device = torch_xla.device()
    dtype = getattr(torch, args.dtype)
    model = Mlp(args.hidden, layers=args.layers, tokens=args.seq_len > 0).to(dtype).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    batches = synthetic_batches(args.steps, args.batch_size, args.seed, seq_len=args.seq_len, dtype=dtype)
    xs = torch.cat([x for x, _ in batches])
    ys = torch.cat([y for _, y in batches])
    loader = DataLoader(TensorDataset(xs, ys), batch_size=args.batch_size)

    # Step through MpDeviceLoader (it marks a step after every batch).
    loss = None
    for step, (x, y) in enumerate(pl.MpDeviceLoader(loader, device)):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss_text(loss, args.loss_bits)}", flush=True)

    # One more step with an explicit mark_step, on a batch moved by hand.
    x, y = batches[0]
    x, y = x.to(device), y.to(device)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"done: {args.steps + 1} steps, final loss {loss_text(loss, args.loss_bits)}")


if __name__ == "__main__":
    main()
