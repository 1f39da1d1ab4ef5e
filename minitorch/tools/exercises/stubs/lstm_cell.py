"""Exercise 17 (lstm_cell): one LSTM step after its projections, the op an RNN runs once per word and layer.

forward(gates, c_prev): gates (N, 4H) holds four pre-activations in PyTorch's order a_i, a_f, a_g, a_o; c_prev
(N, H). Compute
    i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o);   c = f c_prev + i g;   h = o tanh(c)
and return h and c, two outputs (N, H) each. backward(gh, gc) gets one gradient per output, apart: gh = dL/dh,
and gc = dL/dc for the paths that reach c directly (the next step's cell), not the path through h, which is yours
to add; it returns (d_gates (N, 4H), dc_prev). (Here g is the cell candidate, as in PyTorch.)

Derive: c reaches the loss twice, directly (gc) and through h. Find dc first, then each gate's pre-activation with
sigmoid'(a) = s (1 - s) and tanh'(a) = 1 - t^2, then dc_prev.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check lstm_cell --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint lstm_cell
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function


class LSTMCellFunction(Function):
    def forward(self, gates, c_prev):
        raise NotImplementedError

    def backward(self, gh, gc):
        raise NotImplementedError
