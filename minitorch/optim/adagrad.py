"""Adagrad (Duchi, Hazan & Singer, 2011), in PyTorch's form: lr decay, weight decay and an initial accumulator
value; one fused kernel over flat buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer


@backend.fuse
def adagrad_update(xp, p, g, total, weight_decay, eps, clr):
    """g <- g + wd p;  sum <- sum + g^2;  p <- p - clr g / (sqrt(sum) + eps), in place (all (n,))."""
    g = g + weight_decay * p
    total += g * g
    p -= clr * g / (xp.sqrt(total) + eps)


class Adagrad(Optimizer):
    """sum <- sum + g^2;  p <- p - lr / (1 + (t-1) lr_decay) * g / (sqrt(sum) + eps), t this parameter's steps.
    State as PyTorch's: step, sum (starting at initial_accumulator_value)."""

    counts_steps = True
    buffers = ("sum",)

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
        super().__init__(params, lr, lr_decay=lr_decay, weight_decay=weight_decay,
                         initial_accumulator_value=initial_accumulator_value, eps=eps)

    def init_state(self, state, group):
        # the constructor's value, not the group's: PyTorch fills every group's sums with it
        state["sum"][...] = self.defaults["initial_accumulator_value"]

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
        flat.run(adagrad_update, [p, g, state["sum"]], s(group["weight_decay"]), s(group["eps"]), s(clr))
