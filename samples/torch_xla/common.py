"""The model and synthetic data shared by the PyTorch/XLA samples (plain PyTorch)."""

import torch
from torch import nn

IN_FEATURES = 32
NUM_CLASSES = 10
VOCAB = 64


class Mlp(nn.Module):
    """A ReLU classifier with `layers` hidden layers (two by default).

    With `tokens`, the input is a batch of token sequences: each token is embedded and the
    embeddings are averaged over the sequence before the hidden layers. With `einsum`, each linear
    layer (the same parameters) is computed with `torch.einsum`, as attention layers are.
    """

    def __init__(self, hidden, layers=2, tokens=False, einsum=False):
        super().__init__()
        self.einsum = einsum
        self.embed = nn.Embedding(VOCAB, IN_FEATURES) if tokens else None
        stack = [nn.Linear(IN_FEATURES, hidden), nn.ReLU()]
        for _ in range(layers - 1):
            stack += [nn.Linear(hidden, hidden), nn.ReLU()]
        stack.append(nn.Linear(hidden, NUM_CLASSES))
        self.layers = nn.Sequential(*stack)

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x).mean(dim=1)
        if not self.einsum:
            return self.layers(x)
        for layer in self.layers:
            if isinstance(layer, nn.Linear):
                x = torch.einsum("bi,oi->bo", x, layer.weight) + layer.bias
            else:
                x = layer(x)
        return x


def synthetic_batches(steps, batch_size, seed, seq_len=0, dtype=torch.float32):
    """(inputs, labels) pairs on the CPU; labels come from a fixed random linear teacher.

    With `seq_len`, the inputs are token ids of shape (batch_size, seq_len) and the label is
    the sum of a sequence's tokens modulo the number of classes; else they are feature vectors
    of `dtype`.
    """
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(IN_FEATURES, NUM_CLASSES, generator=g)
    batches = []
    for _ in range(steps):
        if seq_len:
            x = torch.randint(0, VOCAB, (batch_size, seq_len), generator=g)
            batches.append((x, x.sum(dim=1) % NUM_CLASSES))
            continue
        x = torch.randn(batch_size, IN_FEATURES, generator=g)
        batches.append((x.to(dtype), (x @ teacher).argmax(dim=1)))
    return batches


def loss_text(loss, bits=False):
    """A loss as the samples print it: 4 decimals, and with `bits` its exact value in hex (`float.hex`),
    so that two runs can be compared bit for bit."""
    value = loss.item()
    return f"{value:.4f}" + (f" bits {value.hex()}" if bits else "")
