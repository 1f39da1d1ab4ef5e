"""Exercise 12 (attention): scaled dot-product attention with a mask and dropout (Vaswani et al. 2017, eq. 1).

forward(q, k, v, mask, dropout_p): q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) float64; mask None or bool
(Tq, Tk), True = may attend; dropout_p in [0, 1). Compute
    s = q k^T / sqrt(d);   w = softmax(s) along the keys, 0 where the mask is False;
    a = w * keep / (1 - dropout_p);   out = a v
where keep = keep_mask(w.shape, dropout_p, "cpu") when dropout_p > 0 (imported below: the engine's own draw, so
that the check sees the same mask). A row of the mask with no True (a padding query) must give weights 0, out 0 and
gradients 0, never nan. backward(g) -> (dq, dk, dv, None) (no gradient for the mask).

Derive: run the forward in reverse, one line each: the matmul rule (exercise 5) for out = a v, the dropout scaling,
the softmax rule (exercise 8) for w = softmax(s), the matmul rule and the constant 1/sqrt(d) for s.

Check: python3 -m minitorch.exercises check attention --dir THIS_FOLDER
Hint: python3 -m minitorch.exercises hint attention
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function
from minitorch.ops.elementwise import keep_mask  # noqa: F401  (the dropout mask)


class ScaledDotProductAttention(Function):
    def forward(self, q, k, v, mask, dropout_p):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
