"""Exercise 17 (lstm_cell): one LSTM step after its projections, the op an RNN runs once per word and layer.

forward(gates, c_prev): gates (N, 4H) holds four pre-activations in PyTorch's order a_i, a_f, a_g, a_o; c_prev
(N, H). Compute
    i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o);   c = f c_prev + i g;   h = o tanh(c)
and return h and c, two outputs (N, H) each. backward(gh, gc) gets one gradient per output -> (d_gates (N, 4H),
dc_prev). (Here g is the cell candidate, as in PyTorch.)

Derive: c reaches the loss twice, directly (gc) and through h. Find dc first, then each gate's pre-activation with
sigmoid'(a) = s (1 - s) and tanh'(a) = 1 - t^2, then dc_prev.

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
