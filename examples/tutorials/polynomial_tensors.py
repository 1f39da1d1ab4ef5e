"""Fit y = sin(x) with a third-order polynomial, computing the gradients by hand (PyTorch's "Tensors" warm-up).

Runs unchanged under `import minitorch as torch` and, with that line changed to `import torch`, under PyTorch: the
starting coefficients are set, not drawn, so both print the same losses.
"""
import math

import minitorch as torch

dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# starting weights set by hand (torch.randn would draw different numbers in each library)
a = torch.tensor(0.3, device=device, dtype=dtype)
b = torch.tensor(-0.2, device=device, dtype=dtype)
c = torch.tensor(0.1, device=device, dtype=dtype)
d = torch.tensor(-0.05, device=device, dtype=dtype)

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    loss = ((y_pred - y) ** 2).sum().item()
    if t % 100 == 99:
        print(t, f"{loss:.6g}")

    # backprop by hand: the gradients of the loss with respect to a, b, c, d
    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x ** 2).sum()
    grad_d = (grad_y_pred * x ** 3).sum()

    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f"Result: y = {a.item():.4f} + {b.item():.4f} x + {c.item():.4f} x^2 + {d.item():.4f} x^3")
