"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), in PyTorch's order of operations."""
import math

from .. import backend
from .optimizer import Optimizer


class Adam(Optimizer):
    """m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;  p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).

    weight_decay adds wd * p to g (L2 regularisation); AdamW instead decays p directly. t counts this parameter's
    own updates (as in PyTorch), so a parameter that first gets a gradient late is still bias-corrected from t = 1.
    """

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def update(self, p, g, state):
        b1, b2 = self.hyper["betas"]
        wd, eps = self.hyper["weight_decay"], self.hyper["eps"]
        state["step"] = t = state.get("step", 0) + 1
        if wd and self.decoupled:
            p *= 1 - self.lr * wd
        elif wd:
            g = g + wd * p
        xp = backend.xp_of(p)
        if "exp_avg" not in state:
            state["exp_avg"] = xp.zeros_like(p)
            state["exp_avg_sq"] = xp.zeros_like(p)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        denom = xp.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        p -= (self.lr / (1 - b1 ** t)) * m / denom


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p (1 - lr wd) before the Adam step."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
