"""Eager mode with `torch_xla.compile`.

In eager mode every operation runs as soon as it is issued; the training step is wrapped in
`torch_xla.compile`, which traces it lazily and compiles it as one graph. The layers are einsums,
which PyTorch/XLA lowers to dots with frontend attributes (`grad_x`, `grad_y`), as in the attention
of pytorch/xla's decoder example.

    PJRT_DEVICE=CPU python samples/torch_xla/eager_compile.py --steps 3
"""

import argparse

import torch
import torch_xla

from common import Mlp, loss_text, synthetic_batches


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loss-bits", action="store_true",
                    help="also print each loss's exact bits (float.hex), to compare runs bit for bit")
    args = ap.parse_args()

    torch_xla.experimental.eager_mode(True)
    torch.manual_seed(args.seed)
    device = torch_xla.device()
    model = Mlp(args.hidden, einsum=True).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step_fn(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled_step = torch_xla.compile(step_fn)
    loss = None
    for step, (x, y) in enumerate(synthetic_batches(args.steps, args.batch_size, args.seed)):
        loss = compiled_step(x.to(device), y.to(device))
        print(f"step {step} loss {loss_text(loss, args.loss_bits)}", flush=True)
    print(f"done: {args.steps} steps, final loss {loss_text(loss, args.loss_bits)}")


if __name__ == "__main__":
    main()
