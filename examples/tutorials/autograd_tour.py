"""What autograd records and how to read it, in the way the blitz's autograd introduction shows it: Q = 3a^3 - b^2
differentiated with Q.backward(gradient=...), the gradients checked against 9a^2 and -2b, the graph walked from
Q.grad_fn through next_functions down to the leaves' AccumulateGrad, requires_grad spreading through an op, a
frozen layer (requires_grad_(False)) left out of the gradient, and torch.no_grad() and detach() cutting the graph.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same lines.
"""
import minitorch as torch
from minitorch import nn

a = torch.tensor([2.0, 3.0], requires_grad=True)
b = torch.tensor([6.0, 4.0], requires_grad=True)
Q = 3 * a ** 3 - b ** 2


def walk(fn, depth=0):
    """Print the graph below fn: each op's node, and each leaf's AccumulateGrad with the leaf's shape. An input
    without grad is (None, 0): left out here, as the two libraries give a number's slot in different places
    (docs/differences.md row 18)."""
    for next_fn, index in fn.next_functions:
        if next_fn is None:
            continue
        if type(next_fn).__name__ == "AccumulateGrad":
            print("  " * depth + f"- leaf of shape {list(next_fn.variable.shape)}, index {index}")
        else:
            print("  " * depth + f"- an op, index {index}")
            walk(next_fn, depth + 1)


print("Q's graph:")   # walked before backward, which lets go of the graph (docs/differences.md row 18)
walk(Q.grad_fn)
external_grad = torch.tensor([1.0, 1.0])
Q.backward(gradient=external_grad)
print("a.grad", a.grad.tolist(), "9a^2", (9 * a ** 2).tolist(), bool((9 * a ** 2 == a.grad).all()))
print("b.grad", b.grad.tolist(), "-2b", (-2 * b).tolist(), bool((-2 * b == b.grad).all()))

x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
print("does a requires grad?", (x + y).requires_grad, "and b?", (x + z).requires_grad)

model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
for param in model[0].parameters():
    param.requires_grad_(False)
model(torch.ones(2, 4)).sum().backward()
print("frozen layer's grads:", [p.grad is None for p in model[0].parameters()],
      "trained layer's:", [p.grad is not None for p in model[2].parameters()])

with torch.no_grad():
    w = a * 2
print("under no_grad:", w.requires_grad, w.grad_fn is None, "detached:", a.detach().requires_grad)
