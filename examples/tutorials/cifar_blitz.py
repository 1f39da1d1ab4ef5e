"""An image classifier trained the way the 60-minute blitz trains its CIFAR-10 one, on synthetic 3x16x16 colour
images (four classes: a red, green or blue square, or a white bar) instead of a download: DataLoaders with
batch_size=4 and num_workers=2, `images, labels = next(dataiter)`, labels printed as `classes[labels[j]]`, a LeNet
with torch.flatten(x, 1), CrossEntropyLoss and SGD with momentum, the running loss printed every 50 mini-batches,
`_, predicted = torch.max(outputs, 1)`, the state_dict saved to a path and loaded back, and the accuracy per class
counted with `classes[label]` over zip(labels, predictions).

Runs unchanged under `import minitorch as torch`; with `import torch` the weights and the data are the same (made
with NumPy) and the loaders do not shuffle, so every printed number agrees.
"""
import os
import tempfile

import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F
import minitorch.optim as optim
from minitorch.utils.data import DataLoader, TensorDataset

classes = ("red", "green", "blue", "bar")
rng = np.random.default_rng(0)


def images(count):
    """count images (count, 3, 16, 16) in [-1, 1] and their classes (0-3)."""
    x = rng.uniform(-1.0, -0.4, (count, 3, 16, 16)).astype(np.float32)
    labels = rng.integers(0, 4, count)
    for image, label in zip(x, labels):
        r, c = rng.integers(2, 9, 2)
        if label < 3:
            image[label, r:r + 6, c:c + 6] = 0.9
        else:
            image[:, r + 2, 2:14] = 0.9
    return torch.from_numpy(x), torch.from_numpy(labels)


trainloader = DataLoader(TensorDataset(*images(800)), batch_size=4, shuffle=False, num_workers=2)
testloader = DataLoader(TensorDataset(*images(200)), batch_size=4, shuffle=False, num_workers=2)

dataiter = iter(trainloader)
images_, labels = next(dataiter)
print("first batch:", " ".join(f"{classes[labels[j]]:5s}" for j in range(4)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)         # 16 -> 14, pooled to 7
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 3)        # 7 -> 5, pooled to 2
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 4)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


net = Net()
with torch.no_grad():
    for name, param in net.named_parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(param.shape)).astype(np.float32)))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(2):
    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 50 == 49:
            print(f"[{epoch + 1}, {i + 1:3d}] loss: {running_loss / 50:.3f}")
            running_loss = 0.0

PATH = os.path.join(tempfile.mkdtemp(), "cifar_net.pth")
torch.save(net.state_dict(), PATH)
net = Net()
net.load_state_dict(torch.load(PATH, weights_only=True))

correct, total = 0, 0
correct_pred = {classname: 0 for classname in classes}
total_pred = {classname: 0 for classname in classes}
with torch.no_grad():
    for images_, labels in testloader:
        outputs = net(images_)
        _, predicted = torch.max(outputs, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
        for label, prediction in zip(labels, predicted):
            if label == prediction:
                correct_pred[classes[label]] += 1
            total_pred[classes[label]] += 1
print(f"Accuracy of the network on the 200 test images: {100 * correct // total} %")
for classname, correct_count in correct_pred.items():
    print(f"Accuracy for class: {classname:5s} is {100 * float(correct_count) / total_pred[classname]:.1f} %")
