"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), in PyTorch's order of operations, as one fused
kernel over flat parameter, gradient and moment buffers."""
import math

from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer


@backend.fuse
def adam_update(xp, p, g, m, v, l2, decay, b1, one_minus_b1, b2, one_minus_b2, root_bias2, eps, step_size):
    """One Adam/AdamW step on p, m, v in place (all (n,)); the scalars are computed on the host from lr and t.

    g <- g + l2 p;  p <- decay p;  m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;
    p <- p - step_size m / (sqrt(v) / root_bias2 + eps)   (step_size = lr / (1-b1^t), root_bias2 = sqrt(1-b2^t))
    """
    g = g + l2 * p
    p *= decay
    m *= b1
    m += one_minus_b1 * g
    v *= b2
    v += one_minus_b2 * (g * g)
    p -= step_size * m / (xp.sqrt(v) / root_bias2 + eps)


class Adam(Optimizer):
    """m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;  p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).

    weight_decay adds wd * p to g (L2 regularisation); AdamW instead decays p directly. t counts this parameter's
    own updates (as in PyTorch), so a parameter that first gets a gradient late is still bias-corrected from t = 1.
    """

    decoupled = False
    buffers = ("exp_avg", "exp_avg_sq")
    counts_steps = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def update(self, p, g, state, t, group):
        b1, b2 = group["betas"]
        wd, eps, lr = group["weight_decay"], group["eps"], group["lr"]
        # scalars in the parameters' dtype, so that float32 buffers are updated in float32 on NumPy and CuPy alike
        s = p.dtype.type
        l2, decay = (0.0, 1 - lr * wd) if self.decoupled else (wd, 1.0)
        flat.run(adam_update, [p, g, state["exp_avg"], state["exp_avg_sq"]], s(l2), s(decay), s(b1), s(1 - b1),
                 s(b2), s(1 - b2), s(math.sqrt(1 - b2 ** t)), s(eps), s(lr / (1 - b1 ** t)))


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p (1 - lr wd) before the Adam step."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
