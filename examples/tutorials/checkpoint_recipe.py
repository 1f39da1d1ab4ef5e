"""Saving and resuming a training run, in the way PyTorch's "Saving and loading a general checkpoint" recipe does it:
a dict of epoch, model_state_dict, optimizer_state_dict and loss saved with torch.save, then a new model and
optimizer loaded from it with load_state_dict, put back in train() mode, and trained on: the resumed run's losses are
the uninterrupted run's.

Runs unchanged under `import minitorch as torch`; with `import torch` the weights and the data are the same (made
with NumPy), so the printed losses agree.
"""
import os
import tempfile

import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.optim as optim

rng = np.random.default_rng(0)
x = torch.from_numpy(rng.normal(size=(64, 8)).astype(np.float32))
y = torch.from_numpy((rng.normal(size=(64, 1)) + x.numpy()[:, :1] * 2).astype(np.float32))
start = {name: rng.uniform(-0.3, 0.3, shape) for name, shape in
         [("0.weight", (16, 8)), ("0.bias", (16,)), ("2.weight", (1, 16)), ("2.bias", (1,))]}


def new_model():
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    model.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in start.items()})
    return model, optim.Adam(model.parameters(), lr=0.01)


def train(model, optimizer, epochs):
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 5))
    return losses, loss


model, optimizer = new_model()
print("uninterrupted:", train(model, optimizer, 10)[0])

model, optimizer = new_model()
losses, loss = train(model, optimizer, 5)
PATH = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save({"epoch": 5, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
            "loss": loss}, PATH)

model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = optim.Adam(model.parameters(), lr=0.01)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
epoch, loss = checkpoint["epoch"], checkpoint["loss"]
model.train()
print(f"resumed at epoch {epoch} (loss {loss.item():.5f}):", losses + train(model, optimizer, 5)[0])
