"""XOR, written as a PyTorch user would write it: only the imports differ (`import torch`, `from torch import nn`).

    python examples/xor.py
"""
import minitorch as torch
from minitorch import nn


def main(epochs=2000, seed=0):
    torch.manual_seed(seed)
    X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = torch.tensor([[0.0], [1.0], [1.0], [0.0]])

    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Sigmoid())
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        if epoch % 500 == 0:
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        probs = model(X)
        predicted = (probs > 0.5).float()
    accuracy = (predicted == y).float().mean().item()
    print(f"predictions {predicted.t().tolist()[0]}  probabilities {[round(p, 3) for p in probs.t().tolist()[0]]}")
    print(f"accuracy {accuracy:.2f}  final loss {loss.item():.4f}")
    return accuracy, loss.item()


if __name__ == "__main__":
    main()
