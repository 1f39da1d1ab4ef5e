"""Train a small MLP on a 2-D spiral the script generates itself, and print the loss falling.

    python examples/mlp_demo.py
"""
import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import nn, optim


def spiral(n_per_class=200, n_classes=3, seed=0):
    """Points (N, 2) on interleaved spiral arms, labels (N,)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(n_classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.normal(0, 0.2, n_per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def main(steps=300):
    mt.manual_seed(0)
    x, y = spiral()
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    for step in range(1, steps + 1):
        logits = model(mt.from_numpy(x))
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == 1:
            acc = (logits.numpy().argmax(-1) == y).mean()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
