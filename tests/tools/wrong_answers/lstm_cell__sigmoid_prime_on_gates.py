"""A wrong answer: sigmoid' written a (1 - a) on the gates' pre-activations instead of s (1 - s)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"sigmoid' is taken on the pre-activation"


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


class LSTMCellFunction(Function):
    def forward(self, gates, c_prev):
        H = c_prev.shape[-1]
        i, f = sigmoid(gates[:, :H]), sigmoid(gates[:, H:2 * H])
        g, o = np.tanh(gates[:, 2 * H:3 * H]), sigmoid(gates[:, 3 * H:])
        c = f * c_prev + i * g
        self.save_for_backward(gates, i, f, g, o, c_prev, c)
        return o * np.tanh(c), c

    def backward(self, gh, gc):
        gates, i, f, g, o, c_prev, c = self.saved_tensors
        H = c.shape[-1]
        a_i, a_f, a_o = gates[:, :H], gates[:, H:2 * H], gates[:, 3 * H:]
        t = np.tanh(c)
        dc = gc + gh * o * (1 - t * t)
        d = [dc * g * a_i * (1 - a_i), dc * c_prev * a_f * (1 - a_f), dc * i * (1 - g * g), gh * t * a_o * (1 - a_o)]
        return np.concatenate(d, axis=1), dc * f
