"""The LSTM cell on the GPU: one kernel forward (h and c) and two backward (the gate gradients, dc_prev). Each reads
the four gate slices of `gates` in place (strided views, no copies) and computes the activations again from them, so
nothing is kept beyond what the reference saves; the reference op takes about a dozen launches each way (sigmoid
alone is four).

The gate gradients are written as one (..., 4, H) array, which is d_gates (..., 4H) without a copy: the kernel runs
over (..., 4, H) with the gate's index k (4, 1) broadcast beside the (..., 1, H) gate slices, and element (k, j)
picks gate k's formula. Four gradient arrays of their own would cost CuPy four copies to join (it concatenates up to
eight arrays one copy each), and a kernel cannot write into four slices of one array's memory here. On the CPU the
reference op runs: the `small` training step is a Transformer's, which has no LSTM cell, so a CPU kernel could not
earn its place there (docs/design.md, CPU kernels)."""
from .. import backend
from ..core import kernel
from ..fused.lstm_cell import LSTMCellFunction, check_shapes
from .cross_entropy import _columns as cached_arange   # arange(n) made once per device and n


def _cell(xp, a_i, a_f, a_g, a_o, c_prev):
    """(i, f, g, o, c, tanh(c)) inside a kernel body: the reference's `cell`, sigmoid as 0.5 (1 + tanh(a / 2))."""
    i, f = 0.5 * (1 + xp.tanh(0.5 * a_i)), 0.5 * (1 + xp.tanh(0.5 * a_f))
    g, o = xp.tanh(a_g), 0.5 * (1 + xp.tanh(0.5 * a_o))
    c = f * c_prev + i * g
    return i, f, g, o, c, xp.tanh(c)


@backend.fuse
def lstm_cell_forward(xp, a_i, a_f, a_g, a_o, c_prev):
    """(h, c) = (o tanh(c), f c_prev + i g)."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    return o * tanh_c, c


@backend.fuse
def lstm_cell_gate_grads(xp, k, gh, gc, a_i, a_f, a_g, a_o, c_prev):
    """d_gates (..., 4, H): gate k's gradient, with dc = gc + gh o (1 - tanh(c)^2) (the reference's backward):
    da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);  da_o = gh tanh(c) o (1 - o)."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    dc = gc + gh * o * (1 - tanh_c * tanh_c)
    return xp.where(k == 0, dc * g * i * (1 - i), xp.where(k == 1, dc * c_prev * f * (1 - f), xp.where(
        k == 2, dc * i * (1 - g * g), gh * tanh_c * o * (1 - o))))


@backend.fuse
def lstm_cell_c_grad(xp, gh, gc, a_i, a_f, a_g, a_o, c_prev):
    """dc_prev = dc f."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    return (gc + gh * o * (1 - tanh_c * tanh_c)) * f


def _gate_slices(gates, H):
    """The four (..., H) views a_i, a_f, a_g, a_o of gates (..., 4H)."""
    return [gates[..., k * H:(k + 1) * H] for k in range(4)]


@kernel(LSTMCellFunction, "cuda")
class LSTMCellCuda(LSTMCellFunction):
    """Saves the reference's gates and c_prev and nothing more: backward computes the activations again inside its
    kernel, which costs less than writing five (N, H) arrays in the forward and reading them back."""

    def forward(self, gates, c_prev):
        check_shapes(gates, c_prev)
        self.save_for_backward(gates, c_prev)
        return lstm_cell_forward(*_gate_slices(gates, c_prev.shape[-1]), c_prev)

    def backward(self, gh, gc):
        gates, c_prev = self.saved_tensors
        H, xp = c_prev.shape[-1], backend.xp_of(gates)
        args = (gh, gc, *_gate_slices(gates, H), c_prev)
        k = cached_arange(xp, 4)[:, None]
        d_gates = lstm_cell_gate_grads(k, *(a[..., None, :] for a in args))
        return d_gates.reshape(gates.shape), lstm_cell_c_grad(*args)
