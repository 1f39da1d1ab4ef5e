"""The LSTM cell on the GPU: one kernel forward (h and c) and two backward (the gate gradients, dc_prev), and one
more for dh_prev where padded rows pass the state on (keep). Each reads the four gate slices of `gates` in place
(strided views, no copies) and computes the activations again from them, so nothing is kept beyond what the
reference saves; the reference op takes about a dozen launches each way (sigmoid alone is four, and a mask adds two
`where`s forward and four backward).

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


def _kept(xp, g, keep):
    """g on the kept rows, 0 on the padded ones (g itself without a mask), inside a kernel body."""
    return g if keep is None else xp.where(keep, g, 0)


@backend.fuse
def lstm_cell_forward(xp, a_i, a_f, a_g, a_o, c_prev, h_prev, keep):
    """(h, c) = (o tanh(c), f c_prev + i g); (h_prev, c_prev) on a row whose keep is False."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    if keep is None:
        return o * tanh_c, c
    return xp.where(keep, o * tanh_c, h_prev), xp.where(keep, c, c_prev)


@backend.fuse
def lstm_cell_gate_grads(xp, k, gh, gc, a_i, a_f, a_g, a_o, c_prev, keep):
    """d_gates (..., 4, H): gate k's gradient, with gh, gc zero on padded rows and dc = gc + gh o (1 - tanh(c)^2)
    (the reference's backward): da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);
    da_o = gh tanh(c) o (1 - o)."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    gh, gc = _kept(xp, gh, keep), _kept(xp, gc, keep)
    dc = gc + gh * o * (1 - tanh_c * tanh_c)
    return xp.where(k == 0, dc * g * i * (1 - i), xp.where(k == 1, dc * c_prev * f * (1 - f), xp.where(
        k == 2, dc * i * (1 - g * g), gh * tanh_c * o * (1 - o))))


@backend.fuse
def lstm_cell_c_grad(xp, gh, gc, a_i, a_f, a_g, a_o, c_prev, keep):
    """dc_prev = dc f, plus gc on a padded row."""
    i, f, g, o, c, tanh_c = _cell(xp, a_i, a_f, a_g, a_o, c_prev)
    dc_prev = (_kept(xp, gc, keep) + _kept(xp, gh, keep) * o * (1 - tanh_c * tanh_c)) * f
    return dc_prev if keep is None else dc_prev + xp.where(keep, 0, gc)


@backend.fuse
def lstm_cell_h_grad(xp, gh, keep):
    """dh_prev = gh on a padded row, else 0."""
    return xp.where(keep, 0, gh)


def _gate_slices(gates, H):
    """The four (..., H) views a_i, a_f, a_g, a_o of gates (..., 4H)."""
    return [gates[..., k * H:(k + 1) * H] for k in range(4)]


@kernel(LSTMCellFunction, "cuda")
class LSTMCellCuda(LSTMCellFunction):
    """Saves the reference's gates, c_prev and keep and nothing more: backward computes the activations again inside
    its kernels, which costs less than writing five (N, H) arrays in the forward and reading them back."""

    def forward(self, gates, c_prev, h_prev=None, keep=None):
        check_shapes(gates, c_prev, h_prev, keep)
        self.save_for_backward(gates, c_prev, keep)
        return lstm_cell_forward(*_gate_slices(gates, c_prev.shape[-1]), c_prev, h_prev, keep)

    def backward(self, gh, gc):
        gates, c_prev, keep = self.saved_tensors
        H, xp = c_prev.shape[-1], backend.xp_of(gates)
        args = (gh, gc, *_gate_slices(gates, H), c_prev, keep)
        k = cached_arange(xp, 4)[:, None]
        d_gates = lstm_cell_gate_grads(k, *(None if a is None else a[..., None, :] for a in args))
        dh_prev = None if keep is None else lstm_cell_h_grad(gh, keep)
        return (d_gates.reshape(gates.shape), lstm_cell_c_grad(*args), dh_prev, None)[:len(self.needs_input_grad)]
