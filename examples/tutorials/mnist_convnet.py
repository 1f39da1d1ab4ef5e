"""A convolutional digit classifier trained the way pytorch/examples' mnist trains one, on synthetic 12x12 "digits"
(ten bar patterns, placed at random, with noise) instead of a download: two Conv2d, max_pool2d, Dropout and
Dropout2d, log_softmax with nll_loss, Adadelta stepped by a StepLR, a shuffling DataLoader (with the example's
num_workers/pin_memory keywords on a GPU), a test loop counting pred.eq(target.view_as(pred)), the weights saved with
torch.save(model.state_dict(), ...) to a file object and loaded back.

Runs unchanged under `import minitorch as torch`; with `import torch` the starting weights and the data are the
same (made with NumPy), so the first line (the test loss before training) agrees; dropout and shuffling draw from
each library's own generator after that.
"""
import io

import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F
from minitorch.optim.lr_scheduler import StepLR
from minitorch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)


def digits(count):
    """count images (count, 1, 12, 12) of ten patterns: bars at five rows (0-4) or five columns (5-9)."""
    x = rng.normal(0.0, 0.3, (count, 1, 12, 12)).astype(np.float32)
    labels = rng.integers(0, 10, count)
    for image, label in zip(x, labels):
        at, start = 2 * (label % 5) + 1, rng.integers(0, 4)
        if label < 5:
            image[0, at, start:start + 8] += 1.0
        else:
            image[0, start:start + 8, at] += 1.0
    return torch.from_numpy(x), torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)     # 12 -> 10
        self.conv2 = nn.Conv2d(8, 16, 3, 1)    # 10 -> 8, pooled to 4
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        """x (N, 1, 12, 12) -> log-probabilities (N, 10)."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def train(model, train_loader, optimizer):
    model.train()
    for data, target in train_loader:
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def test(model, test_loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, 100.0 * correct / len(test_loader.dataset)


loader_kwargs = {"num_workers": 1, "pin_memory": True} if torch.cuda.is_available() else {}
train_loader = DataLoader(TensorDataset(*digits(1024)), batch_size=64, shuffle=True, **loader_kwargs)
test_loader = DataLoader(TensorDataset(*digits(256)), batch_size=128)
model = Net()
with torch.no_grad():
    for name, param in model.named_parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(param.shape)).astype(np.float32)))
print("before training: test loss {:.4f}, accuracy {:.1f}%".format(*test(model, test_loader)))
optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(1, 5):
    train(model, train_loader, optimizer)
    loss, accuracy = test(model, test_loader)
    print(f"epoch {epoch}: test loss {loss:.4f}, accuracy {accuracy:.1f}%")
    scheduler.step()

buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
restored = Net()
restored.load_state_dict(torch.load(buffer))
print("reloaded: test loss {:.4f}, accuracy {:.1f}%".format(*test(restored, test_loader)))
