"""Stochastic gradient descent with momentum, dampening and Nesterov's form (PyTorch's), one fused kernel over flat
buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer


@backend.fuse
def sgd_update(xp, p, g, weight_decay, lr):
    """p <- p - lr (g + wd p), in place (p, g (n,))."""
    p -= lr * (g + weight_decay * p)


@backend.fuse
def sgd_momentum_update(xp, p, g, buf, weight_decay, momentum, dampening, nesterov, lr):
    """d <- g + wd p;  buf <- momentum buf + (1 - dampening) d;  p <- p - lr (d + momentum buf if nesterov else buf),
    in place (buf starts at 0 and the first step takes no dampening, so buf = d at the first step)."""
    d = g + weight_decay * p
    buf *= momentum
    buf += (1 - dampening) * d
    p -= lr * (nesterov * (d + momentum * buf) + (1 - nesterov) * buf)


class SGD(Optimizer):
    """d <- g + wd p;  buf <- momentum buf + (1 - dampening) d (buf = d at the first step);
    p <- p - lr buf, or with Nesterov p <- p - lr (d + momentum buf)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.counts_steps = dampening != 0   # the first step takes no dampening: it needs each parameter's count
        super().__init__(params, lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov)

    def buffers_of(self, group):
        return ("momentum_buffer",) if group["momentum"] else ()

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        if group["momentum"]:
            dampening = 0.0 if t == 1 else group["dampening"]
            flat.run(sgd_momentum_update, [p, g, state["momentum_buffer"]], s(group["weight_decay"]),
                     s(group["momentum"]), s(dampening), s(bool(group["nesterov"])), s(group["lr"]))
        else:
            flat.run(sgd_update, [p, g], s(group["weight_decay"]), s(group["lr"]))
