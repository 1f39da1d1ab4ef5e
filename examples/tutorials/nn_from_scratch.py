"""Logistic regression on synthetic 8x8 "digits", first from raw tensors and then refactored step by step into
nn.Module, nn.Linear, optim, TensorDataset, DataLoader and a convolutional nn.Sequential, in the way the tutorial
"What is torch.nn really?" does it: weights with requires_grad_(), a log_softmax written by hand, the negative
log-likelihood by indexing input[range(n), target], the update under torch.no_grad() with grad.zero_(), then
F.cross_entropy, nn.Parameter, model.parameters(), opt.step(), a fit() over loss_batch with a validation set, a
Lambda layer and AdaptiveAvgPool2d.

Runs unchanged under `import minitorch as torch`; with `import torch` the starting weights and the data are the
same (made with NumPy) and the batches come in the same order, so the printed losses agree.
"""
import math

import numpy as np

import minitorch as torch
from minitorch import nn, optim
import minitorch.nn.functional as F
from minitorch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)


def digits(count):
    """count flattened 8x8 images (count, 64) of ten patterns (bars at five rows or five columns), and their classes."""
    x = rng.normal(0.0, 0.3, (count, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, count)
    for image, label in zip(x, y):
        at = label % 5 + 1
        if label < 5:
            image[at, 1:7] += 1.0
        else:
            image[1:7, at] += 1.0
    return torch.from_numpy(x.reshape(count, 64)), torch.from_numpy(y)


x_train, y_train = digits(512)
x_valid, y_valid = digits(128)
n, bs, lr, epochs = x_train.shape[0], 64, 0.5, 2
start_weights = rng.normal(0.0, 1.0, (64, 10)).astype(np.float32) / math.sqrt(64)

# 1. from raw tensors
weights = torch.from_numpy(start_weights.copy())
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


loss_func = nll
print(f"raw tensors: start loss {loss_func(model(x_train[:bs]), y_train[:bs]).item():.4f}")
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        xb, yb = x_train[i * bs:i * bs + bs], y_train[i * bs:i * bs + bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
print(f"raw tensors: loss {loss_func(model(x_valid), y_valid).item():.4f}, "
      f"accuracy {accuracy(model(x_valid), y_valid).item():.4f}")


# 2. nn.Module, nn.Linear, optim, TensorDataset, DataLoader, fit()
class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    with torch.no_grad():
        model.lin.weight.copy_(torch.from_numpy(start_weights.T.copy()))
        model.lin.bias.zero_()
    return model, optim.SGD(model.parameters(), lr=lr)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl, name):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(f"{name} epoch {epoch}: validation loss {val_loss:.4f}")


def get_data(train_ds, valid_ds, bs):
    order = rng.permutation(len(train_ds)).tolist()   # the same shuffled order under both libraries
    return DataLoader(train_ds, batch_size=bs, sampler=order), DataLoader(valid_ds, batch_size=bs * 2)


train_dl, valid_dl = get_data(TensorDataset(x_train, y_train), TensorDataset(x_valid, y_valid), bs)
model, opt = get_model()
fit(epochs, model, F.cross_entropy, opt, train_dl, valid_dl, "nn.Linear")


# 3. a convolutional network as an nn.Sequential, with a Lambda layer
class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


cnn = nn.Sequential(
    Lambda(lambda x: x.view(-1, 1, 8, 8)),
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
with torch.no_grad():
    for p in cnn.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
opt = optim.SGD(cnn.parameters(), lr=0.2, momentum=0.9)
fit(epochs + 2, cnn, F.cross_entropy, opt, train_dl, valid_dl, "CNN")
