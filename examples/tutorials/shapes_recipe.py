"""Reasoning about shapes, in the way PyTorch's "Reasoning about Shapes" recipe does it: a tensor on the `meta`
device has a shape and a dtype but no data, so a layer or a whole network run on one gives its output's shape
without computing (or allocating) anything; forward hooks print each layer's output shape, and the shapes agree with
what the same network gives on real data.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same lines.
"""
import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F

t = torch.rand(2, 3, 10, 10, device="meta")
conv = nn.Conv2d(3, 5, 2, stride=2, padding=1).to("meta")
print(f"input shape: {list(t.shape)}, dtype {t.dtype}, device {t.device}")
print(f"conv output shape: {list(conv(t).shape)}")


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
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def fw_hook(module, input, output):
    print(f"Shape of output to {type(module).__name__} is {list(output.shape)}.")


net = Net().to("meta")   # parameters too: shapes and dtypes, no memory
for name, layer in net.named_modules():
    layer.register_forward_hook(fw_hook)
out = net(torch.rand(1, 3, 32, 32, device="meta"))
print("on meta:", list(out.shape), out.dtype, out.device)
print("on real data:", list(Net()(torch.rand(1, 3, 32, 32)).shape))
try:
    out.sum().item()
except (RuntimeError, NotImplementedError) as e:
    print("a meta tensor has no values to read:", type(e).__name__)
