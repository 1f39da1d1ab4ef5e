"""Stochastic gradient descent with momentum (PyTorch's form, no dampening)."""
from .optimizer import Optimizer


class SGD(Optimizer):
    """g <- g + wd p;  buf <- momentum buf + g (buf = g at the first step);  p <- p - lr buf."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        super().__init__(params, lr, momentum=momentum, weight_decay=weight_decay)

    def update(self, p, g, state):
        if self.hyper["weight_decay"]:
            g = g + self.hyper["weight_decay"] * p
        if self.hyper["momentum"]:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = g.copy()
            else:
                buf = state["momentum_buffer"]
                buf *= self.hyper["momentum"]
                buf += g
            g = state["momentum_buffer"]
        p -= self.lr * g
