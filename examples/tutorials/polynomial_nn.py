"""Fit y = sin(x) with a third-order polynomial as an nn model: Linear on the powers (x, x^2, x^3), nn.Flatten,
nn.MSELoss, a hand-written update over model.parameters() (PyTorch's "nn module" example).

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same losses.
"""
import math

import minitorch as torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

# y is a linear function of (x, x^2, x^3): the input is x's powers, (2000, 3)
p = torch.tensor([1, 2, 3])   # int64 exponents of a float32 base: float32, by PyTorch's promotion
xx = x.unsqueeze(-1) ** p

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1),   # (2000, 1) -> (2000,), the shape of y
)
# starting weights set, not drawn, so that both libraries start alike
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.1, -0.05, 0.02]]))
    model[0].bias.copy_(torch.tensor([0.3]))

loss_fn = torch.nn.MSELoss(reduction="sum")

learning_rate = 1e-6
for t in range(2000):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, f"{loss.item():.6g}")

    model.zero_grad()
    loss.backward()

    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]
print(f"Result: y = {linear_layer.bias.item():.4f} + {linear_layer.weight[:, 0].item():.4f} x + "
      f"{linear_layer.weight[:, 1].item():.4f} x^2 + {linear_layer.weight[:, 2].item():.4f} x^3")
