"""The model and synthetic data shared by the PyTorch/XLA samples (plain PyTorch)."""

import torch
from torch import nn

IN_FEATURES = 32
NUM_CLASSES = 10


class Mlp(nn.Module):
    """A two-hidden-layer ReLU classifier."""

    def __init__(self, hidden):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(IN_FEATURES, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, NUM_CLASSES))

    def forward(self, x):
        return self.layers(x)


def synthetic_batches(steps, batch_size, seed):
    """(inputs, labels) pairs on the CPU; labels come from a fixed random linear teacher."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(IN_FEATURES, NUM_CLASSES, generator=g)
    batches = []
    for _ in range(steps):
        x = torch.randn(batch_size, IN_FEATURES, generator=g)
        batches.append((x, (x @ teacher).argmax(dim=1)))
    return batches
