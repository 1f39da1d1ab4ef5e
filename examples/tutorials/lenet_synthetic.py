"""A LeNet-sized convolutional network learns to tell three kinds of 16x16 synthetic images apart (a horizontal bar,
a vertical bar, a diagonal, each placed at random, with noise): two Conv2d + MaxPool2d stages, torch.flatten(x, 1)
and three Linear layers, trained with SGD and momentum, as the 60-minute blitz trains its classifier.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same losses (the weights and
the data are made with NumPy, so both libraries start alike).
"""
import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F

rng = np.random.default_rng(0)


def images(count):
    """count noisy images (count, 1, 16, 16) and their classes: 0 a horizontal bar, 1 a vertical one, 2 a diagonal."""
    x = rng.normal(0.0, 0.3, (count, 1, 16, 16))
    labels = rng.integers(0, 3, count)
    for image, label in zip(x, labels):
        at = rng.integers(3, 13)
        if label == 0:
            image[0, at, 2:14] += 1.0
        elif label == 1:
            image[0, 2:14, at] += 1.0
        else:
            image[0, np.arange(2, 14), np.arange(2, 14)] += 1.0
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)          # 16 -> 14, pooled to 7
        self.conv2 = nn.Conv2d(6, 12, 3)         # 7 -> 5, pooled to 2
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(12 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)                  # every dim but the batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


net = Net()
with torch.no_grad():   # starting weights from NumPy, the scale of PyTorch's default initialisation
    for param in net.parameters():
        fan_in = param.numel() // param.shape[0] if param.dim() > 1 else param.shape[0]
        param.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(param.shape)).astype(np.float32) / np.sqrt(fan_in)))

train_x, train_y = images(240)
test_x, test_y = images(90)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

for epoch in range(14):
    total = 0.0
    for start in range(0, 240, 24):
        inputs, labels = train_x[start:start + 24], train_y[start:start + 24]
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(epoch, f"{total / 10:.4f}")

with torch.no_grad():
    predicted = net(test_x).argmax(1)
print(f"accuracy on {len(test_y)} new images: {100.0 * (predicted == test_y).float().mean().item():.1f}%")
