"""A wrong answer: the gate gradients concatenated in the order i, g, f, o (the cell candidate second), where the
forward splits i, f, g, o."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"f and g are swapped"


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
        t = np.tanh(c)
        dc = gc + gh * o * (1 - t * t)
        di, df = dc * g * i * (1 - i), dc * c_prev * f * (1 - f)
        dg, do = dc * i * (1 - g * g), gh * t * o * (1 - o)
        return np.concatenate([di, dg, df, do], axis=1), dc * f
