"""Defining a network, in the way PyTorch's "Defining a Neural Network" recipe does it: an nn.Module whose __init__
makes two Conv2d, a Dropout2d and a Dropout and two Linear layers, and whose forward chains F.relu, F.max_pool2d,
torch.flatten and F.log_softmax; the network then passed a random 28x28 image. In training mode Dropout2d zeroes
whole channels (and scales the rest by 1/(1-p)); in eval mode it passes the input through.

Runs unchanged under `import minitorch as torch`; with `import torch` the weights and the image are the same (made
with NumPy), so the printed numbers agree (dropout's draws are counted, not compared).
"""
import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        """x (N, 1, 28, 28) -> log-probabilities (N, 10)."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


rng = np.random.default_rng(0)
my_nn = Net()
with torch.no_grad():
    for name, param in my_nn.named_parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.05, 0.05, tuple(param.shape)).astype(np.float32)))
random_data = torch.from_numpy(rng.uniform(0.0, 1.0, (1, 1, 28, 28)).astype(np.float32))
my_nn.eval()
result = my_nn(random_data)
print("log-probabilities:", np.round(result.detach().numpy()[0], 4).tolist())
print("they sum to 1:", round(result.exp().sum().item(), 5))

drop = nn.Dropout2d(0.25)
x = torch.ones(8, 64, 3, 3)
y = drop(x)
per_channel = y.sum(dim=(2, 3))   # a channel is zeroed or scaled whole: its 9 entries sum to 0 or 9 / 0.75
whole = bool(((per_channel == 0) | ((per_channel - 12.0).abs() < 1e-4)).all())
kept = (per_channel != 0).float().mean().item()
print("Dropout2d zeroes whole channels:", whole, "kept about 3/4 of them:", abs(kept - 0.75) < 0.1)
drop.eval()
print("in eval mode it is the identity:", bool(torch.equal(drop(x), x)))
