"""The LSTM cell's elementwise part as one Function with a hand-written backward and two outputs, h and c."""
from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..functions import cat


def join(parts):
    """parts joined along the last dim: arrays on the fast path, Tensors (through Cat) under create_graph."""
    return backend.xp_of(parts[0]).concatenate(parts, axis=-1) if A.is_array(parts[0]) else cat(parts, dim=-1)


def check_shapes(gates, c_prev):
    """Raise unless gates is (..., 4H) for c_prev (..., H)."""
    H = c_prev.shape[-1]
    if gates.shape[-1] != 4 * H or gates.shape[:-1] != c_prev.shape[:-1]:
        raise ValueError(f"lstm_cell: gates {tuple(gates.shape)} must be (..., 4H) for c_prev {tuple(c_prev.shape)}")


class LSTMCellFunction(Function):
    """(gates (N, 4H), c_prev (N, H)) -> (h, c), each (N, H): two outputs; gates ordered i, f, g, o (as in PyTorch).

    i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g);  c = f c_prev + i g;  h = o tanh(c)
    Backward (docs/backprop.md section 6), with gh, gc the gradients of h and c, and dc = gc + gh o (1 - tanh(c)^2):
      da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);  da_o = gh tanh(c) o (1 - o)
      dc_prev = dc f
    Saves gates and c_prev; backward computes the activations again from them (so do the GPU kernels).
    """
    needs_float = True

    @staticmethod
    def cell(gates, c_prev):
        """(i, f, g, o, c, tanh_c) from the inputs: for the forward and again for the backward."""
        H = c_prev.shape[-1]
        i, f = A.sigmoid(gates[..., :H]), A.sigmoid(gates[..., H:2 * H])
        g, o = A.tanh(gates[..., 2 * H:3 * H]), A.sigmoid(gates[..., 3 * H:])
        c = f * c_prev + i * g
        return i, f, g, o, c, A.tanh(c)

    def forward(self, gates, c_prev):
        check_shapes(gates, c_prev)
        self.save_for_backward(gates, c_prev)
        i, f, g, o, c, tanh_c = self.cell(gates, c_prev)
        return o * tanh_c, c

    def backward(self, gh, gc):
        gates, c_prev = self.saved_tensors
        i, f, g, o, c, tanh_c = self.cell(gates, c_prev) if self.kept is None else self.kept
        dc = gc + gh * o * (1 - tanh_c * tanh_c)
        d_gates = join([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                        gh * tanh_c * o * (1 - o)])
        return d_gates, dc * f


def lstm_cell(gates, c_prev):
    """One LSTM step after the input and recurrent projections: gates (N, 4H), c_prev (N, H) -> (h, c), each (N, H)."""
    return LSTMCellFunction.apply(gates, c_prev)
