"""The LSTM cell's elementwise part as one Function with a hand-written backward and two outputs, h and c."""
from .. import backend
from ..core import Function
from ..ops import array_ops as A
from ..functions import cat


def join(parts):
    """parts joined along the last dim: arrays on the fast path, Tensors (through Cat) under create_graph."""
    return backend.xp_of(parts[0]).concatenate(parts, axis=-1) if A.is_array(parts[0]) else cat(parts, dim=-1)


def check_shapes(gates, c_prev, h_prev=None, keep=None):
    """Raise unless gates is (..., 4H) for c_prev (..., H), h_prev is c_prev's shape and keep (..., 1) bool, or None."""
    H = c_prev.shape[-1]
    if gates.shape[-1] != 4 * H or gates.shape[:-1] != c_prev.shape[:-1]:
        raise ValueError(f"lstm_cell: gates {tuple(gates.shape)} must be (..., 4H) for c_prev {tuple(c_prev.shape)}")
    if (keep is None) != (h_prev is None):
        raise ValueError("lstm_cell: keep and h_prev come together (a padded row passes h_prev and c_prev on)")
    if h_prev is not None and (tuple(h_prev.shape) != tuple(c_prev.shape)
                               or tuple(keep.shape) != tuple(c_prev.shape[:-1]) + (1,) or keep.dtype != bool):
        raise ValueError(f"lstm_cell: h_prev {tuple(h_prev.shape)} must be c_prev's shape {tuple(c_prev.shape)} and "
                         f"keep {tuple(keep.shape)} a bool (..., 1)")


class LSTMCellFunction(Function):
    """(gates (N, 4H), c_prev (N, H), h_prev (N, H), keep (N, 1) bool) -> (h, c), each (N, H): two outputs; gates
    ordered i, f, g, o (as in PyTorch); h_prev and keep may both be None (every row a real step).

    i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g);  c = f c_prev + i g;  h = o tanh(c)
    A row whose keep is False is a padded step: its h and c are h_prev and c_prev, passed on unchanged.
    Backward (docs/backprop.md section 6), with gh, gc the gradients of h and c (kept rows only) and
    dc = gc + gh o (1 - tanh(c)^2):
      da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);  da_o = gh tanh(c) o (1 - o)
      dc_prev = dc f (+ gc on a padded row);  dh_prev = gh on a padded row, else 0
    Saves gates, c_prev and keep; backward computes the activations again from them (so do the GPU kernels).
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

    def forward(self, gates, c_prev, h_prev=None, keep=None):
        check_shapes(gates, c_prev, h_prev, keep)
        self.save_for_backward(gates, c_prev, keep)
        i, f, g, o, c, tanh_c = self.cell(gates, c_prev)
        if keep is None:
            return o * tanh_c, c
        return A.where(keep, o * tanh_c, h_prev), A.where(keep, c, c_prev)

    def backward(self, gh, gc):
        gates, c_prev, keep = self.saved_tensors
        i, f, g, o, c, tanh_c = self.kept or self.cell(gates, c_prev)
        dh_prev = gc_passed = None
        if keep is not None:   # a padded row's gradients pass to h_prev and c_prev; the cell gets none there
            dh_prev, gc_passed = A.where(keep, 0, gh), A.where(keep, 0, gc)
            gh, gc = A.where(keep, gh, 0), A.where(keep, gc, 0)
        dc = gc + gh * o * (1 - tanh_c * tanh_c)
        d_gates = join([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                        gh * tanh_c * o * (1 - o)])
        dc_prev = dc * f if keep is None else dc * f + gc_passed
        return (d_gates, dc_prev, dh_prev, None)[:len(self.needs_input_grad)]   # one per input given


def lstm_cell(gates, c_prev, h_prev=None, keep=None):
    """One LSTM step after the input and recurrent projections: gates (N, 4H), c_prev (N, H) -> (h, c), each (N, H).
    With h_prev (N, H) and keep (N, 1) bool: rows whose keep is False pass (h_prev, c_prev) on unchanged."""
    if keep is not None:   # a mask, not an input of the graph: an array on the gates' device
        keep = backend.to_device(backend.array_of(keep), gates.device)
    return LSTMCellFunction.apply(gates, c_prev, h_prev, keep)
