"""A wrong answer: the h path into dc written gh * o, without tanh'(c)."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"tanh'\(c\) = 1 - tanh\(c\)\^2 is left out"


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
        dc = gc + gh * o
        d = [dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g), gh * np.tanh(c) * o * (1 - o)]
        return np.concatenate(d, axis=1), dc * f
