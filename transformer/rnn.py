"""The LSTM (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al. 2000) over padded batches:
multi-layer, optionally bidirectional, one Python loop over time whose step is one matmul and one fused cell.

Each step computes gates = [x_t; h_{t-1}] W^T + b, gates ordered i, f, g, o, then F.lstm_cell. The input part is
not projected for all time steps in one matmul beforehand: reading step t's slice back out of a (B, T, 4 d_hidden)
projection costs a full-size gradient array per step in this engine (getitem's backward), which took more time
than the one large matmul saved. Stacking per-step outputs is cheap (stack's backward hands out views).

Padding: a step whose token is padding (mask False) passes the state through unchanged, so a sentence's final state
is the one after its last real token, whatever the padding, in both directions.
"""
import math

import minitorch as mt
import minitorch.functional as F
from minitorch import nn


class LSTMLayer(nn.Module):
    """One layer, one direction: weight (4 hidden_size, input_size + hidden_size) acting on [x_t; h_{t-1}].

    Initialised as PyTorch does, U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), except the bias: 1 for the forget gate
    and 0 elsewhere, so the cell starts out remembering (Gers et al. 2000; Jozefowicz et al. 2015).
    """

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        self.weight = nn.Parameter(nn.init.uniform_(mt.zeros(4 * hidden_size, input_size + hidden_size), -bound, bound))
        self.bias = nn.Parameter(mt.zeros(4 * hidden_size))
        self.bias.data[hidden_size:2 * hidden_size] = 1.0

    def zero_state(self, batch_size):
        """(h, c), each zeros (B, hidden_size), on the weights' device and dtype."""
        w = self.weight
        return tuple(mt.zeros(batch_size, self.hidden_size, dtype=w.dtype, device=w.device) for _ in range(2))

    def step(self, x, state, weight_t=None, keep=None):
        """x (B, input_size), state (h, c) each (B, hidden_size) -> the next (h, c).

        weight_t: self.weight.T, passed in by a loop over time so that the transpose is one op, not one per step.
        keep: a bool array (B, 1), False where the step is padding: that row's state carries over (in the cell's op).
        """
        h, c = state
        weight_t = self.weight.T if weight_t is None else weight_t
        gates = mt.cat([x, h], dim=-1) @ weight_t + self.bias
        return F.lstm_cell(gates, c, None if keep is None else h, keep)

    def forward(self, xs, state=None, keep=None, reverse=False):
        """xs: T tensors (B, input_size) -> (T outputs h_t (B, hidden_size), the final (h, c)).

        keep: a bool Tensor (B, T), True at real tokens (None: all real); at a padded step the state carries over.
        reverse: run from the last step to the first (the backward direction); outputs stay in input order.
        """
        if state is None:
            state = self.zero_state(xs[0].shape[0])
        weight_t = self.weight.T
        # which steps hold padding at all, so that steps without any skip the masking; read on the CPU only: on a GPU
        # reading the mask would make the host wait, and masking every step costs the cell one small kernel
        if keep is None:
            padded = []
        elif keep.device == "cpu":
            padded = (~keep.data.all(axis=0)).tolist()
        else:
            padded = [True] * len(xs)
        outputs = [None] * len(xs)
        for t in (reversed(range(len(xs))) if reverse else range(len(xs))):   # (keep's array: the cell's mask)
            h, c = self.step(xs[t], state, weight_t, keep.data[:, t:t + 1] if padded and padded[t] else None)
            state = (h, c)
            outputs[t] = h
        return outputs, state

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class LSTM(nn.Module):
    """A stack of LSTM layers: x (B, T, input_size) -> outputs (B, T, D hidden_size), D = 2 if bidirectional else 1.

    Dropout (p = dropout) is applied to the outputs of every layer but the last (Zaremba et al. 2014). A
    bidirectional layer concatenates the forward and backward outputs, [h_fwd; h_bwd], as the next layer's input.
    States are lists over layers of (h, c), each (B, D hidden_size), the two directions concatenated the same way.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bidirectional=False, dropout=0.0):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"LSTM: num_layers must be >= 1, got {num_layers}")
        self.hidden_size, self.num_layers, self.bidirectional = hidden_size, num_layers, bidirectional
        D = 2 if bidirectional else 1
        self.forward_layers = nn.ModuleList(
            [LSTMLayer(input_size if i == 0 else D * hidden_size, hidden_size) for i in range(num_layers)])
        self.backward_layers = nn.ModuleList(
            [LSTMLayer(input_size if i == 0 else D * hidden_size, hidden_size) for i in range(num_layers)]
        ) if bidirectional else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, state=None, keep=None):
        """x (B, T, input_size), state: initial [(h, c)] per layer (None: zeros; unidirectional only), keep: bool
        Tensor (B, T), True at real tokens -> outputs (B, T, D hidden_size), final [(h, c)] per layer (each after
        the last real token)."""
        if x.ndim != 3 or x.shape[1] == 0:
            raise ValueError(f"LSTM: expected input of shape (B, T >= 1, input_size), got {x.shape}")
        if self.bidirectional and state is not None:
            raise ValueError("LSTM: a bidirectional LSTM starts from zeros; pass state=None")
        xs = [x[:, t] for t in range(x.shape[1])]
        finals = []
        for i in range(self.num_layers):
            if i > 0:
                xs = [self.dropout(h) for h in xs]
            outputs, (h, c) = self.forward_layers[i](xs, None if state is None else state[i], keep)
            if self.bidirectional:
                back, (hb, cb) = self.backward_layers[i](xs, None, keep, reverse=True)
                outputs = [mt.cat([f, b], dim=-1) for f, b in zip(outputs, back)]
                h, c = mt.cat([h, hb], dim=-1), mt.cat([c, cb], dim=-1)
            finals.append((h, c))
            xs = outputs
        return mt.stack(xs, dim=1), finals

    def step(self, x, state):
        """One time step of a unidirectional LSTM: x (B, input_size), state [(h, c)] per layer -> (the last layer's
        h (B, hidden_size), the new state)."""
        if self.bidirectional:
            raise ValueError("LSTM.step: a bidirectional LSTM needs the whole sequence; use forward")
        new_state = []
        for i, layer in enumerate(self.forward_layers):
            if i > 0:
                x = self.dropout(x)
            x, c = layer.step(x, state[i])
            new_state.append((x, c))
        return x, new_state

    def extra_repr(self):
        return f"num_layers={self.num_layers}, bidirectional={self.bidirectional}"
