"""Adadelta (Zeiler, 2012), in PyTorch's form and order of operations: lr, rho, eps, weight decay, maximize; one fused
kernel over flat buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer, check_options


@backend.fuse
def adadelta_update(xp, p, g, square_avg, acc_delta, sign, weight_decay, rho, one_minus_rho, eps, lr):
    """g <- sign g + wd p;  s <- rho s + (1-rho) g^2;  d = sqrt(a + eps) / sqrt(s + eps) g;
    a <- rho a + (1-rho) d^2;  p <- p - lr d, in place (all (n,); sign -1 maximizes)."""
    g = sign * g + weight_decay * p
    square_avg *= rho
    square_avg += one_minus_rho * (g * g)
    delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * g
    acc_delta *= rho
    acc_delta += one_minus_rho * (delta * delta)
    p -= lr * delta


class Adadelta(Optimizer):
    """s <- rho s + (1-rho) g^2;  d = sqrt(a + eps) / sqrt(s + eps) g;  a <- rho a + (1-rho) d^2;  p <- p - lr d.
    State as PyTorch's: step, square_avg, acc_delta."""

    counts_steps = True
    buffers = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, maximize=False):
        check_options(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        flat.run(adadelta_update, [p, g, state["square_avg"], state["acc_delta"]], s(-1 if group["maximize"] else 1),
                 s(group["weight_decay"]), s(group["rho"]), s(1 - group["rho"]), s(group["eps"]), s(group["lr"]))
