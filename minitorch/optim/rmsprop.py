"""RMSprop (Hinton's lecture 6e), in PyTorch's form and order of operations: centered and momentum variants, one
fused kernel over flat buffers."""
from .. import backend
from ..nn.utils import flat
from .optimizer import Optimizer


@backend.fuse
def rmsprop_update(xp, p, g, square_avg, weight_decay, alpha, one_minus_alpha, eps, lr):
    """g <- g + wd p;  s <- alpha s + (1-alpha) g^2;  p <- p - lr g / (sqrt(s) + eps), in place (all (n,))."""
    g = g + weight_decay * p
    square_avg *= alpha
    square_avg += one_minus_alpha * (g * g)
    p -= lr * g / (xp.sqrt(square_avg) + eps)


@backend.fuse
def rmsprop_momentum_update(xp, p, g, square_avg, buf, weight_decay, alpha, one_minus_alpha, eps, momentum, lr):
    """As rmsprop_update, with buf <- momentum buf + g / (sqrt(s) + eps);  p <- p - lr buf."""
    g = g + weight_decay * p
    square_avg *= alpha
    square_avg += one_minus_alpha * (g * g)
    buf *= momentum
    buf += g / (xp.sqrt(square_avg) + eps)
    p -= lr * buf


@backend.fuse
def rmsprop_centered_update(xp, p, g, square_avg, grad_avg, weight_decay, alpha, one_minus_alpha, eps, lr):
    """Centered: m <- alpha m + (1-alpha) g;  p <- p - lr g / (sqrt(s - m^2) + eps)."""
    g = g + weight_decay * p
    square_avg *= alpha
    square_avg += one_minus_alpha * (g * g)
    grad_avg *= alpha
    grad_avg += one_minus_alpha * g
    p -= lr * g / (xp.sqrt(square_avg - grad_avg * grad_avg) + eps)


@backend.fuse
def rmsprop_centered_momentum_update(xp, p, g, square_avg, grad_avg, buf, weight_decay, alpha, one_minus_alpha, eps,
                                     momentum, lr):
    """Centered, with momentum: buf <- momentum buf + g / (sqrt(s - m^2) + eps);  p <- p - lr buf."""
    g = g + weight_decay * p
    square_avg *= alpha
    square_avg += one_minus_alpha * (g * g)
    grad_avg *= alpha
    grad_avg += one_minus_alpha * g
    buf *= momentum
    buf += g / (xp.sqrt(square_avg - grad_avg * grad_avg) + eps)
    p -= lr * buf


class RMSprop(Optimizer):
    """s <- alpha s + (1-alpha) g^2;  p <- p - lr g / (sqrt(s) + eps) (centered: s - m^2 under the root, m the mean
    gradient; momentum: the step goes through a buffer). State as PyTorch's: step, square_avg, momentum_buffer,
    grad_avg."""

    counts_steps = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
        super().__init__(params, lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered)

    def buffers_of(self, group):
        return (("square_avg",) + (("momentum_buffer",) if group["momentum"] else ())
                + (("grad_avg",) if group["centered"] else ()))

    def update(self, p, g, state, t, group):
        s = p.dtype.type
        common = (s(group["weight_decay"]), s(group["alpha"]), s(1 - group["alpha"]), s(group["eps"]))
        arrays = [p, g, state["square_avg"]] + ([state["grad_avg"]] if group["centered"] else [])
        if group["momentum"]:
            kernel = rmsprop_centered_momentum_update if group["centered"] else rmsprop_momentum_update
            flat.run(kernel, arrays + [state["momentum_buffer"]], *common, s(group["momentum"]), s(group["lr"]))
        else:
            kernel = rmsprop_centered_update if group["centered"] else rmsprop_update
            flat.run(kernel, arrays, *common, s(group["lr"]))
