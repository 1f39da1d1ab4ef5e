"""Warm-starting a model from another's parameters, in the way PyTorch's "Warmstarting model using parameters from a
different model" recipe does it: netA's state_dict saved, then loaded into netB, whose layers differ, with
load_state_dict(..., strict=False), which reports the keys missing and unexpected and copies the ones that match.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same lines.
"""
import io

import minitorch as torch
from minitorch import nn


class NetA(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class NetB(nn.Module):
    """NetA's fc1, a wider fc2 under another name, and one more layer."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 8)
        self.head = nn.Linear(8, 6)
        self.fc3 = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc3(torch.relu(self.head(torch.relu(self.fc1(x)))))


netA = NetA()
buffer = io.BytesIO()
torch.save(netA.state_dict(), buffer)
buffer.seek(0)
netB = NetB()
result = netB.load_state_dict(torch.load(buffer), strict=False)
print("missing keys:", sorted(result.missing_keys))
print("unexpected keys:", sorted(result.unexpected_keys))
print("fc1 copied:", bool(torch.equal(netB.fc1.weight, netA.fc1.weight)),
      bool(torch.equal(netB.fc1.bias, netA.fc1.bias)))
try:
    netB.load_state_dict(netA.state_dict())
except RuntimeError as e:
    print("strict loading refuses:", str(e).splitlines()[0].split(" for ")[0])
