"""The step time of a LeNet (the 60-minute blitz's: two 5x5 Conv2d + MaxPool2d stages, three Linear layers) on
32x32 single-channel images: forward, backward and an SGD step, median over steps, printed per batch size.

    python3 examples/lenet_step_time.py [--device cuda] [--steps 20]

Figures only (the convolutions are im2col and one matrix product each, minitorch/ops/conv.py); nothing is asserted.
"""
import argparse
import statistics
import time

import numpy as np

import minitorch as torch
from minitorch import backend, nn
import minitorch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = torch.flatten(F.max_pool2d(F.relu(self.conv2(x)), 2), 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def step_ms(batch, device, steps):
    """Median milliseconds of one training step at this batch size."""
    torch.manual_seed(0)
    model = LeNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((batch, 1, 32, 32)).astype(np.float32), device=device)
    y = torch.tensor(rng.integers(0, 10, batch), device=device)
    times = []
    for _ in range(steps + 2):   # the first two warm up (allocations, CuPy's kernel compilation)
        start = time.perf_counter()
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        backend.synchronize(device)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times[2:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"LeNet training step (forward + backward + SGD), float32, {args.device}, median of {args.steps} steps")
    for batch in (4, 16, 64):
        ms = step_ms(batch, args.device, args.steps)
        print(f"batch {batch:>3}: {ms:8.2f} ms a step, {1e3 * batch / ms:9.0f} images/s")


if __name__ == "__main__":
    main()
