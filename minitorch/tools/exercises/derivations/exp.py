"""exp: d exp(a) / da = exp(a), the output itself: backward is g * out."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick

WORDS = {
    "g": "the incoming gradient g (dL/da = g * exp(a))",
    "out": "the derivative exp(a) (= the output) in dL/da = g * out",
    ("exp'", "at_output"): "the derivative is taken at the output: exp(out) where it is exp(a) = out",
    ("exp'", "at_g"): "the derivative is taken at the incoming gradient: exp(g) where it is exp(a) = out",
    ("exp'", "input"): "dL/da is g * a: the derivative of exp is exp(a) (the output), not a",
    ("exp'", "divided"): "dL/da is g / out: divided by exp(a) where it multiplies",
    ("exp'", "squared"): "dL/da is g * out^2: exp(a) applied twice",
    ("exp'", "sigmoid"): "dL/da is g * out (1 - out): sigmoid's derivative s (1 - s), not exp's",
    ("sign", "minus"): "dL/da has its sign flipped: d exp(a) = +exp(a) da",
}


class Exp(Function):
    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(a, out)
        return out

    def backward(self, g):
        a, out = self.saved_tensors
        derivative = pick("exp'", factor("out", out), at_output=np.exp(out), at_g=np.exp(g), input=a, divided=1 / out,
                          squared=out * out, sigmoid=out * (1 - out))
        return pick("sign", factor("g", g) * derivative, minus=-(g * derivative))
