"""The LSTM cell on the GPU: the activations the forward computes are kept, so that backward need not compute them
again (the reference saves only its inputs and recomputes three sigmoids and two tanh). On the CPU the reference op
runs: the `small` training step is a Transformer's, which has no LSTM cell, so a CPU kernel could not earn its place
there (docs/design.md, CPU kernels)."""
from .. import backend
from ..core import kernel
from ..fused.lstm_cell import LSTMCellFunction, check_shapes


@kernel(LSTMCellFunction, "cuda")
class LSTMCellCuda(LSTMCellFunction):
    """Saves the reference's gates and c_prev, and keeps i, f, g, o and tanh(c): five (N, H) arrays more."""

    def forward(self, gates, c_prev):
        check_shapes(gates, c_prev)
        i, f, g, o, c, tanh_c = self.cell(gates, c_prev)
        self.save_for_backward(gates, c_prev)
        self.kept = i, f, g, o, tanh_c
        return o * tanh_c, c

    def backward(self, gh, gc):
        (i, f, g, o, tanh_c), (_, c_prev) = self.kept, self.saved_tensors
        xp = backend.xp_of(gh)
        dc = gc + gh * o * (1 - tanh_c * tanh_c)
        d_gates = xp.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                                  gh * tanh_c * o * (1 - o)], axis=-1)
        return d_gates, dc * f

