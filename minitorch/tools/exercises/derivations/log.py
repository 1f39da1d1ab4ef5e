"""log: d log(a) / da = 1 / a: backward is g / a."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick

WORDS = {
    "g": "the incoming gradient g (dL/da = g / a)",
    "a": "the division by a (d log(a) = da / a)",
    ("log'", "times"): "dL/da is g * a: multiplied by a where log's derivative divides (1 / a)",
    ("log'", "squared"): "dL/da is g / a^2: divided by a twice (that is the derivative of -1/a, one derivative too "
                         "many)",
    ("log'", "at_output"): "the derivative is taken at the output: g / log(a) where it is g / a",
    ("log'", "log_itself"): "dL/da is g * log(a): log itself where its derivative 1 / a belongs",
    ("log'", "exp"): "dL/da is g * exp(a): exp's derivative, not log's (1 / a)",
    ("sign", "minus"): "dL/da has its sign flipped: d log(a) = +da / a",
}


class Log(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, g):
        a, = self.saved_tensors
        da = pick("log'", factor("g", g) / factor("a", a), times=g * a, squared=g / (a * a), at_output=g / np.log(a),
                  log_itself=g * np.log(a), exp=g * np.exp(a))
        return pick("sign", da, minus=-da)
