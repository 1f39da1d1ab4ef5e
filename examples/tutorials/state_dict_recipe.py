"""What a state_dict holds, in the way PyTorch's "What is a state_dict?" recipe shows it: a network's parameters by
name with their sizes, an optimizer's state and param_groups, and both saved, with torch.save, to a file object and
loaded back into fresh objects that then compute the same.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same lines.
"""
import io

import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F
import minitorch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


net = Net()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
print("Model's state_dict:")
for param_tensor in net.state_dict():
    print(param_tensor, "\t", list(net.state_dict()[param_tensor].size()))

x = torch.from_numpy(np.random.default_rng(0).normal(size=(2, 3, 32, 32)).astype(np.float32))
net(x).sum().backward()
optimizer.step()   # momentum buffers now in the optimizer's state
state = optimizer.state_dict()
print("Optimizer's state_dict:")
print("state", "\t", {k: sorted(v) for k, v in state["state"].items()})
print("param_groups", "\t", [{k: g[k] for k in ("lr", "momentum", "dampening", "weight_decay", "nesterov", "params")}
                             for g in state["param_groups"]])

buffer = io.BytesIO()
torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
buffer.seek(0)
saved = torch.load(buffer)
again = Net()
again.load_state_dict(saved["model"])
again_optimizer = optim.SGD(again.parameters(), lr=0.5)
again_optimizer.load_state_dict(saved["optimizer"])
print("reloaded lr", again_optimizer.param_groups[0]["lr"], "same output",
      bool(torch.allclose(net(x), again(x))))
