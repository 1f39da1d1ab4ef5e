"""The LSTM cell on the GPU: the activations the forward computes are kept, so that backward need not compute them
again (the reference saves only its inputs and recomputes three sigmoids and two tanh). On the CPU the reference op
runs: the `small` training step is a Transformer's, which has no LSTM cell, so a CPU kernel could not earn its place
there (docs/design.md, CPU kernels)."""
from ..core import kernel
from ..fused.lstm_cell import LSTMCellFunction, check_shapes


@kernel(LSTMCellFunction, "cuda")
class LSTMCellCuda(LSTMCellFunction):
    """Saves the reference's gates and c_prev, and keeps i, f, g, o, c and tanh(c) for the reference's backward:
    five (N, H) arrays more (c is the output)."""

    def forward(self, gates, c_prev):
        check_shapes(gates, c_prev)
        self.save_for_backward(gates, c_prev)
        self.kept = self.cell(gates, c_prev)
        i, f, g, o, c, tanh_c = self.kept
        return o * tanh_c, c
