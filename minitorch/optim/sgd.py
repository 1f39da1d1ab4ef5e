"""Stochastic gradient descent with momentum (PyTorch's form, no dampening), one fused kernel over flat buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer


@backend.fuse
def sgd_update(xp, p, g, weight_decay, lr):
    """p <- p - lr (g + wd p), in place (p, g (n,))."""
    p -= lr * (g + weight_decay * p)


@backend.fuse
def sgd_momentum_update(xp, p, g, buf, weight_decay, momentum, lr):
    """buf <- momentum buf + (g + wd p);  p <- p - lr buf, in place (buf starts at 0, so buf = g at the first step)."""
    buf *= momentum
    buf += g + weight_decay * p
    p -= lr * buf


class SGD(Optimizer):
    """g <- g + wd p;  buf <- momentum buf + g (buf = g at the first step);  p <- p - lr buf."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        super().__init__(params, lr, momentum=momentum, weight_decay=weight_decay)

    def buffers_of(self, group):
        return ("momentum_buffer",) if group["momentum"] else ()

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        if group["momentum"]:
            flat.run(sgd_momentum_update, [p, g, state["momentum_buffer"]], s(group["weight_decay"]),
                     s(group["momentum"]), s(group["lr"]))
        else:
            flat.run(sgd_update, [p, g], s(group["weight_decay"]), s(group["lr"]))
