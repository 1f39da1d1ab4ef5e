"""A wrong answer: returns the local derivative 1 / a without the incoming gradient g."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"incoming gradient g"


class Log(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, g):
        a, = self.saved_tensors
        return 1 / a
