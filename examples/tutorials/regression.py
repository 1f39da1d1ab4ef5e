"""Fitting a polynomial with one nn.Linear on its powers, in the way pytorch/examples' regression does it: features
made with torch.cat of x ** i, F.smooth_l1_loss, the update written by hand under no_grad, a printed description of
the learned polynomial (0-d tensors formatted with '{:+.2f}').

Runs unchanged under `import minitorch as torch`; with `import torch` the weights, the target and the batches are
the same (made with NumPy), so the printed losses and coefficients agree.
"""
import numpy as np

import minitorch as torch
import minitorch.nn.functional as F

POLY_DEGREE = 4
rng = np.random.default_rng(0)
W_target = torch.from_numpy(rng.uniform(-3.0, 3.0, (POLY_DEGREE, 1)).astype(np.float32))
b_target = torch.from_numpy(rng.uniform(-3.0, 3.0, (1,)).astype(np.float32))


def make_features(x):
    """x (N,) -> (N, POLY_DEGREE): the columns x, x^2, ..., x^POLY_DEGREE."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    """The target function: a polynomial of degree POLY_DEGREE."""
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    """The polynomial as a string, 'y = +1.23 x^1 -0.50 x^2 ... +0.10'."""
    result = "y = "
    for i, w in enumerate(W):
        result += "{:+.2f} x^{} ".format(w, i + 1)
    result += "{:+.2f}".format(b[0])
    return result


def get_batch(batch_size=32):
    """A batch of features (batch_size, POLY_DEGREE) and targets (batch_size, 1)."""
    random = torch.from_numpy(rng.uniform(-1.0, 1.0, batch_size).astype(np.float32))
    x = make_features(random)
    return x, f(x)


fc = torch.nn.Linear(W_target.size(0), 1)
with torch.no_grad():
    fc.weight.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, (1, POLY_DEGREE)).astype(np.float32)))
    fc.bias.fill_(0.0)

for batch_idx in range(1, 2001):
    batch_x, batch_y = get_batch()
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    with torch.no_grad():   # the example writes param.data.add_(...): minitorch's .data is the array (differences.md)
        for param in fc.parameters():
            param.add_(-0.1 * param.grad)
    if batch_idx % 400 == 0:
        print(f"{batch_idx} loss {loss:.6f}")

print("Learned function:\t" + poly_desc(fc.weight.view(-1), fc.bias))
print("Actual function:\t" + poly_desc(W_target.view(-1), b_target))
