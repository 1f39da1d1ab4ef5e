"""A word-level language model with nn.RNN, in the way pytorch/examples' word_language_model trains one: a corpus
batchified into columns (narrow, view, t().contiguous()), get_batch slicing bptt steps, the hidden state detached
between batches (repackage_hidden), clip_grad_norm_, the SGD update written by hand (p.add_(p.grad, alpha=-lr)
under no_grad), the learning rate annealed when validation stops improving, perplexity as math.exp of the loss.

Runs unchanged under `import minitorch as torch`; with `import torch` the weights are the same (set from NumPy by
parameter name, names and shapes being PyTorch's) and dropout is off, so the printed losses agree.
"""
import math

import numpy as np

import minitorch as torch
from minitorch import nn

text = ("the cat sat on the mat . the dog sat on the log . a cat and a dog sat on a mat . "
        "the dog saw the cat . the cat saw a dog on the log . ") * 12
words = text.split()
vocab = sorted(set(words))
word2idx = {w: i for i, w in enumerate(vocab)}
ids = torch.tensor([word2idx[w] for w in words])
split = len(ids) * 9 // 10
train_data_1d, val_data_1d = ids[:split], ids[split:]


def batchify(data, bsz):
    """data (N,) -> (N // bsz, bsz): bsz columns, each a contiguous stretch of the corpus."""
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


class RNNModel(nn.Module):
    """Embedding -> nn.RNN (tanh) -> Linear over the vocabulary."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity="tanh", dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        """input (T, B) of word ids, hidden (nlayers, B, nhid) -> log-probabilities (T * B, ntoken), hidden."""
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, len(vocab))
        return torch.nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    """The hidden state cut from the graph of the batches before it."""
    return h.detach()


def get_batch(source, i, bptt=8):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


rng = np.random.default_rng(0)
train_data, val_data = batchify(train_data_1d, 6), batchify(val_data_1d, 2)
model = RNNModel(len(vocab), 16, 32, 2)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
criterion = nn.NLLLoss()


def evaluate(data_source):
    model.eval()
    total_loss, hidden = 0.0, model.init_hidden(data_source.size(1))
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, 8):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


lr, best_val_loss = 2.0, None
for epoch in range(1, 7):
    model.train()
    hidden = model.init_hidden(train_data.size(1))
    for batch, i in enumerate(range(0, train_data.size(0) - 1, 8)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        with torch.no_grad():   # the example writes p.data.add_(...): minitorch's .data is the array (differences.md)
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
    val_loss = evaluate(val_data)
    print(f"{epoch} loss {val_loss:.4f} ppl {math.exp(val_loss):.3f} lr {lr}")
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0
