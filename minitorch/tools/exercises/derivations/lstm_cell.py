"""lstm_cell: c = f c_prev + i g, h = o tanh(c). c reaches the loss directly (gc) and through h: dc = gc +
gh o tanh'(c); then each gate is one factor of a product times its activation's derivative, dc_prev = dc f."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import blocks, factor, pick, term

WORDS = {
    "gc": "the direct gradient gc of c in dc = gc + gh o tanh'(c) (c is an output too)",
    "h path": "the h path gh o tanh'(c) in dc = gc + gh o tanh'(c)",
    "o in h path": "the factor o in the h path of dc (h = o tanh(c))",
    ("tanh'(c)", "missing"): "tanh'(c) = 1 - tanh(c)^2 is left out of the h path of dc",
    ("tanh'(c)", "at_c_squared"): "tanh'(c) is taken as 1 - c^2 where it is 1 - tanh(c)^2",
    ("sigmoid'", "pre_activation"): "sigmoid' is taken on the pre-activation: a (1 - a) where it is s (1 - s) with "
                                    "s = sigmoid(a)",
    ("tanh'(g)", "pre_activation"): "the cell candidate's tanh' is taken on the pre-activation: 1 - a_g^2 where it "
                                    "is 1 - g^2 with g = tanh(a_g)",
    ("tanh'(g)", "missing"): "the cell candidate's tanh' = 1 - g^2 is left out of its block",
    ("do", "dc"): "the o block uses dc where it uses gh (o enters only h = o tanh(c))",
    ("do", "c"): "the o block uses c where it uses tanh(c) (h = o tanh(c))",
    ("di", "c_prev"): "the i block uses c_prev where it uses g (c = f c_prev + i g: dc/di = g)",
    ("df", "g"): "the f block uses g where it uses c_prev (c = f c_prev + i g: dc/df = c_prev)",
    "f in dc_prev": "dc_prev's factor f (dc_prev = dc f)",
    ("dc_prev", "gc_only"): "dc_prev is gc f where it is dc f: the h path's part of dc is left out",
    "gates": ("the gate blocks of d_gates, in PyTorch's order i | f | g | o", ["i", "f", "g", "o"]),
}


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


class LSTMCellFunction(Function):
    def forward(self, gates, c_prev):
        a_i, a_f, a_g, a_o = np.split(gates, 4, axis=-1)
        i, f, g, o = _sigmoid(a_i), _sigmoid(a_f), np.tanh(a_g), _sigmoid(a_o)
        c = f * c_prev + i * g
        self.save_for_backward(gates, c_prev, c)
        return o * np.tanh(c), c

    def backward(self, gh, gc):
        gates, c_prev, c = self.saved_tensors
        a_i, a_f, a_g, a_o = np.split(gates, 4, axis=-1)
        i, f, g, o = _sigmoid(a_i), _sigmoid(a_f), np.tanh(a_g), _sigmoid(a_o)
        tanh_c = np.tanh(c)
        dc = term("gc", gc) + term("h path", gh * factor("o in h path", o) * pick(
            "tanh'(c)", 1 - tanh_c ** 2, missing=1, at_c_squared=1 - c ** 2))
        di = dc * pick("di", g, c_prev=c_prev) * pick("sigmoid'", i * (1 - i), pre_activation=a_i * (1 - a_i))
        df = dc * pick("df", c_prev, g=g) * pick("sigmoid'", f * (1 - f), pre_activation=a_f * (1 - a_f))
        dg = dc * i * pick("tanh'(g)", 1 - g ** 2, pre_activation=1 - a_g ** 2, missing=1)
        do = pick("do", gh * tanh_c, dc=dc * tanh_c, c=gh * c) * pick("sigmoid'", o * (1 - o),
                                                                         pre_activation=a_o * (1 - a_o))
        d_gates = np.concatenate(blocks("gates", [di, df, dg, do]), axis=-1)
        return d_gates, pick("dc_prev", dc, gc_only=gc) * factor("f in dc_prev", f)
