"""A tiny classifier in the way PyTorch's "Learn the Basics" trains one: a Dataset in a DataLoader (batches,
shuffling from a seeded generator), nn.Sequential with nn.Flatten, CrossEntropyLoss, SGD with momentum over two
parameter groups, a learning-rate schedule, train and test loops.

The data are three noisy rings of points, drawn with NumPy so that both libraries see the same ones. Runs unchanged
under `import minitorch as torch`; with `import torch` the weights start the same, so the first test loss printed
is the same, and training (whose batches each library shuffles with its own generator) reaches a similar accuracy.
"""
import numpy as np

import minitorch as torch
from minitorch import nn

rng = np.random.default_rng(0)


def rings(n):
    """n points (n, 1, 2) on three rings of radius 1, 2, 3 with noise, and their ring (0, 1, 2)."""
    labels = rng.integers(0, 3, n)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = labels + 1 + rng.normal(0, 0.15, n)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)[:, None, :]
    return torch.tensor(points.tolist()), torch.tensor(labels.tolist())


class Rings(torch.utils.data.Dataset):
    """A map-style dataset: __len__ and __getitem__, as the tutorials' custom datasets."""

    def __init__(self, n):
        self.points, self.labels = rings(n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.points[i], self.labels[i]


training_data, test_data = Rings(600), Rings(200)
train_dataloader = torch.utils.data.DataLoader(training_data, batch_size=32, shuffle=True,
                                               generator=torch.Generator().manual_seed(0))
test_dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(test_data.points, test_data.labels),
                                              batch_size=64)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                                               nn.Linear(32, 3))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


model = NeuralNetwork()
with torch.no_grad():   # the same starting weights in both libraries
    for name, param in model.named_parameters():
        param.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(param.shape)).tolist()))

loss_fn = nn.CrossEntropyLoss()
decay, no_decay = [], []
for name, param in model.named_parameters():
    (no_decay if name.endswith("bias") else decay).append(param)
optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}, {"params": no_decay}], lr=0.1, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)


def train_loop(dataloader, model, loss_fn, optimizer):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def test_loop(dataloader, model, loss_fn):
    model.eval()
    num_batches, size = len(dataloader), len(dataloader.dataset)
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).sum().item()
    return test_loss / num_batches, correct / size


loss, accuracy = test_loop(test_dataloader, model, loss_fn)
print(f"before training: test loss {loss:.5f}, accuracy {100 * accuracy:.1f}%")
epochs = 12
for t in range(epochs):
    train_loop(train_dataloader, model, loss_fn, optimizer)
    scheduler.step()
    loss, accuracy = test_loop(test_dataloader, model, loss_fn)
    print(f"epoch {t + 1}: test loss {loss:.4f}, accuracy {100 * accuracy:.1f}%, lr {scheduler.get_last_lr()[0]:.4g}")
print(f"final accuracy {100 * accuracy:.1f}%")
