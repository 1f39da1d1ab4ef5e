"""Learning sine waves with two stacked nn.LSTMCell in double precision, in the way pytorch/examples'
time_sequence_prediction does it: the cells stepped by hand over input.split(1, dim=1), the outputs joined with
torch.cat, the last output fed back in to predict the future, an MSELoss on the whole sequence; Adam here where the
example uses L-BFGS.

Runs unchanged under `import minitorch as torch`; with `import torch` the waves and the weights are the same (made
with NumPy), so the printed losses agree.
"""
import numpy as np

import minitorch as torch
from minitorch import nn

rng = np.random.default_rng(0)
T, L, N = 20, 60, 24
x = np.arange(L) + rng.integers(-4 * T, 4 * T, (N, 1))
waves = np.sin(x / T).astype(np.float64)


class Sequence(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        """input (N, L) -> (N, L + future): each step's prediction of the next value."""
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):   # the prediction fed back in
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


input = torch.from_numpy(waves[4:, :-1])
target = torch.from_numpy(waves[4:, 1:])
test_input = torch.from_numpy(waves[:4, :-1])
test_target = torch.from_numpy(waves[:4, 1:])

seq = Sequence().double()
with torch.no_grad():
    for name, param in seq.named_parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(param.shape))))
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(seq.parameters(), lr=0.02)
for i in range(1, 121):
    optimizer.zero_grad()
    out = seq(input)
    loss = criterion(out, target)
    loss.backward()
    optimizer.step()
    if i % 20 == 0:
        print(f"{i} loss {loss.item():.6f}")

future = 20
with torch.no_grad():
    pred = seq(test_input, future=future)
    loss = criterion(pred[:, :-future], test_target)
    print(f"test loss {loss.item():.6f}")
    y = pred.detach().numpy()
print("predicted future, first wave:", np.round(y[0, -future::5], 3).tolist())
