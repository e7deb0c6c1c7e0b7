"""`torch.compile` with the `openxla` backend (TorchDynamo captures the graph, XLA compiles it).

    PJRT_DEVICE=CPU python samples/torch_xla/dynamo_openxla.py --steps 3
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

    torch.manual_seed(args.seed)
    device = torch_xla.device()
    model = Mlp(args.hidden).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def forward_loss(x, y):
        return loss_fn(model(x), y)

    compiled = torch.compile(forward_loss, backend="openxla")
    loss = None
    for step, (x, y) in enumerate(synthetic_batches(args.steps, args.batch_size, args.seed)):
        opt.zero_grad()
        loss = compiled(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss_text(loss, args.loss_bits)}", flush=True)
    print(f"done: {args.steps} steps, final loss {loss_text(loss, args.loss_bits)}")


if __name__ == "__main__":
    main()
