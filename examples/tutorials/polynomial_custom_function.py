"""Fit y = sin(x) with y = a + b P3(c + d x), P3 the Legendre polynomial of degree three, written as an autograd
Function with its own backward in PyTorch's form (static methods with ctx: PyTorch's "Defining new autograd
Functions" example).

Runs under `import minitorch as torch`, whose Function accepts PyTorch's ctx form; with `import torch` it prints the
same losses.
"""
import math

import minitorch as torch


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5 x^3 - 3 x) / 2, and its derivative (15 x^2 - 3) / 2."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# weights near the ones PyTorch's example starts from, so that the fit converges
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

learning_rate = 5e-6
for t in range(2000):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = ((y_pred - y) ** 2).sum()
    if t % 100 == 99:
        print(t, f"{loss.item():.6g}")
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)")
