"""Adamax (Kingma & Ba, 2015, section 7.1: Adam with the infinity norm), in PyTorch's form and order of operations;
one fused kernel over flat buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer, check_options


@backend.fuse
def adamax_update(xp, p, g, exp_avg, exp_inf, sign, weight_decay, b2, one_minus_b1, eps, clr):
    """g <- sign g + wd p;  m <- m + (1-b1) (g - m);  u <- max(b2 u, |g| + eps);  p <- p - clr m / u, in place (all
    (n,); clr = lr / (1 - b1^t); sign -1 maximizes)."""
    g = sign * g + weight_decay * p
    exp_avg += one_minus_b1 * (g - exp_avg)
    exp_inf[...] = xp.maximum(exp_inf * b2, xp.abs(g) + eps)
    p -= clr * exp_avg / exp_inf


class Adamax(Optimizer):
    """m <- b1 m + (1-b1) g;  u <- max(b2 u, |g| + eps);  p <- p - lr / (1-b1^t) * m / u, t this parameter's steps.
    State as PyTorch's: step, exp_avg, exp_inf."""

    counts_steps = True
    buffers = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *, maximize=False):
        check_options(lr=lr, eps=eps, weight_decay=weight_decay, betas=betas)
        super().__init__(params, lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize)

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        b1, b2 = group["betas"]
        flat.run(adamax_update, [p, g, state["exp_avg"], state["exp_inf"]], s(-1 if group["maximize"] else 1),
                 s(group["weight_decay"]), s(b2), s(1 - b1), s(group["eps"]), s(group["lr"] / (1 - b1 ** t)))
