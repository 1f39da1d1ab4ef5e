"""Fit y = sin(x) with a third-order polynomial, the update done by torch.optim.RMSprop, the learning rate lowered by
a schedule and the bias in a parameter group of its own (PyTorch's "optim" example, with groups).

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same losses.
"""
import math

import minitorch as torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1.0, 2.0, 3.0])   # (float: minitorch refuses an int64 exponent for a float base; docs/differences.md)
xx = x.unsqueeze(-1) ** p

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.1, -0.05, 0.02]]))
    model[0].bias.copy_(torch.tensor([0.3]))
loss_fn = torch.nn.MSELoss(reduction="sum")

optimizer = torch.optim.RMSprop([{"params": [model[0].weight]},
                                 {"params": [model[0].bias], "lr": 1e-2}], lr=1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=500, gamma=0.5)
for t in range(2000):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, f"{loss.item():.6g}", [f"{g['lr']:.3g}" for g in optimizer.param_groups])

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

linear_layer = model[0]
print(f"Result: y = {linear_layer.bias.item():.4f} + {linear_layer.weight[:, 0].item():.4f} x + "
      f"{linear_layer.weight[:, 1].item():.4f} x^2 + {linear_layer.weight[:, 2].item():.4f} x^3")
