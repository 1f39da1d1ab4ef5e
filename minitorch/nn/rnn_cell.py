"""nn.LSTMCell with PyTorch's interface: one step, (B, input_size) in (or unbatched (input_size,)), (h, c) out, and
PyTorch's parameter names and shapes (weight_ih (4 H, input_size), weight_hh (4 H, H), bias_ih, bias_hh), so that
weights copied from torch.nn give the same outputs. The step is F.lstm_cell, the fused cell that nn.LSTM runs."""
import math

from .. import functional as F
from ..factories import zeros
from . import init
from .module import Module, Parameter


class LSTMCell(Module):
    """i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of x W_ih^T + b_ih + h W_hh^T + b_hh (PyTorch's gate order);
    c' = f c + i g; h' = o tanh(c')."""

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        bound = 1.0 / math.sqrt(hidden_size)   # PyTorch's: every weight and bias from U(-1/sqrt(H), 1/sqrt(H))
        shapes = [("weight_ih", (4 * hidden_size, input_size)), ("weight_hh", (4 * hidden_size, hidden_size))]
        if bias:
            shapes += [("bias_ih", (4 * hidden_size,)), ("bias_hh", (4 * hidden_size,))]
        for name, shape in shapes:
            setattr(self, name, Parameter(init.uniform_(zeros(shape, dtype=dtype), -bound, bound)))

    def forward(self, input, hx=None):
        """input (B, input_size) or (input_size,), hx = (h, c) each (B, H) or None (zeros) -> (h', c')."""
        if input.ndim not in (1, 2):
            raise ValueError(f"LSTMCell: expected input of 1 or 2 dims, got shape {input.shape}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"LSTMCell: input has inconsistent input_size: got {input.shape[-1]} expected "
                             f"{self.input_size}")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        if hx is None:
            h = c = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        else:
            h, c = (t.unsqueeze(0) if unbatched else t for t in hx)
            for name, t in (("hx[0]", h), ("hx[1]", c)):
                if t.shape != (x.shape[0], self.hidden_size):
                    raise RuntimeError(f"LSTMCell: {name} has shape {t.shape}, expected "
                                       f"{(x.shape[0], self.hidden_size)}")
        gates = F.linear(x, self.weight_ih, self.bias_ih if self.bias else None) + F.linear(
            h, self.weight_hh, self.bias_hh if self.bias else None)
        h, c = F.lstm_cell(gates, c)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")
