"""The LSTM cell's elementwise part as one Function with a hand-written backward."""
from .. import backend
from ..core import Function
from ..tensor import cat
from . import composed


def _sigmoid(xp, a):
    return 0.5 * (1 + xp.tanh(0.5 * a))  # = 1 / (1 + exp(-a)), without overflow


class LSTMCellFunction(Function):
    """(gates (N, 4H), c_prev (N, H)) -> hc (N, 2H) = [h, c], gates ordered i, f, g, o (as in PyTorch).

    i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g);  c = f c_prev + i g;  h = o tanh(c)
    Backward (docs/backprop.md section 6), with gh, gc the gradients of h and c, and dc = gc + gh o (1 - tanh(c)^2):
      da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);  da_o = gh tanh(c) o (1 - o)
      dc_prev = dc f
    """
    needs_float = True

    def composed(self, gates, c_prev):  # what create_graph=True differentiates (docs/backprop.md)
        return cat(composed.lstm_cell(gates, c_prev), dim=-1)

    def forward(self, gates, c_prev):
        xp = backend.xp_of(gates)
        H = c_prev.shape[-1]
        if gates.shape[-1] != 4 * H or gates.shape[:-1] != c_prev.shape[:-1]:
            raise ValueError(f"lstm_cell: gates {tuple(gates.shape)} must be (..., 4H) for c_prev "
                             f"{tuple(c_prev.shape)}")
        i = _sigmoid(xp, gates[..., :H])
        f = _sigmoid(xp, gates[..., H:2 * H])
        g = xp.tanh(gates[..., 2 * H:3 * H])
        o = _sigmoid(xp, gates[..., 3 * H:])
        c = f * c_prev + i * g
        tanh_c = xp.tanh(c)
        self.saved = (i, f, g, o, c_prev, tanh_c)
        return xp.concatenate([o * tanh_c, c], axis=-1)

    def backward(self, grad):
        i, f, g, o, c_prev, tanh_c = self.saved
        xp = backend.xp_of(grad)
        H = c_prev.shape[-1]
        gh, gc = grad[..., :H], grad[..., H:]
        dc = gc + gh * o * (1 - tanh_c * tanh_c)
        d_gates = xp.concatenate([dc * g * i * (1 - i),
                                  dc * c_prev * f * (1 - f),
                                  dc * i * (1 - g * g),
                                  gh * tanh_c * o * (1 - o)], axis=-1)
        return d_gates, dc * f


def lstm_cell(gates, c_prev):
    """One LSTM step after the input and recurrent projections: gates (N, 4H), c_prev (N, H) -> (h, c), each (N, H)."""
    H = c_prev.shape[-1]
    hc = LSTMCellFunction.apply(gates, c_prev)
    return hc[..., :H], hc[..., H:]
