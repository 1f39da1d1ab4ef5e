"""A character-level language model with nn.LSTM, in the way PyTorch's NLP tutorials write one: nn.Embedding,
nn.LSTM(batch_first=True), nn.Linear, CrossEntropyLoss over (N * T, C), Adam, gradient clipping, then greedy
generation carrying the (h, c) state from step to step.

Runs unchanged under `import minitorch as torch`; with `import torch` the weights start the same (set from NumPy
by parameter name, names and shapes being PyTorch's), the batches are the same (drawn with NumPy), so the losses
printed agree (to float32 rounding).
"""
import numpy as np

import minitorch as torch
from minitorch import nn

text = ("the quick brown fox jumps over the lazy dog. " * 4 + "a stitch in time saves nine. " * 4
        + "all that glitters is not gold. " * 4)
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
data = np.array([stoi[ch] for ch in text])
rng = np.random.default_rng(0)


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, ids, state=None):
        out, state = self.lstm(self.embedding(ids), state)   # out (B, T, hidden_size)
        return self.fc(out), state


model = CharLSTM(len(chars), 16, 48)
with torch.no_grad():
    for name, param in model.named_parameters():
        param.copy_(torch.tensor(rng.uniform(-0.2, 0.2, tuple(param.shape)).tolist()))

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
seq_len, batch_size = 24, 16
for step in range(1, 151):
    starts = rng.integers(0, len(data) - seq_len - 1, batch_size)
    x = torch.tensor(np.stack([data[s:s + seq_len] for s in starts]).tolist())
    y = torch.tensor(np.stack([data[s + 1:s + seq_len + 1] for s in starts]).tolist())
    logits, _ = model(x)
    loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 25 == 0:
        print(f"step {step}: loss {loss.item():.4f}")

# generation: one character at a time, the LSTM's (h, c) carried over
model.eval()
with torch.no_grad():
    ids = torch.tensor([[stoi[ch] for ch in "the "]])
    logits, state = model(ids)
    out = "the "
    for _ in range(40):
        nxt = logits[0, -1].argmax().item()
        out += chars[nxt]
        logits, state = model(torch.tensor([[nxt]]), state)
print(repr(out))
