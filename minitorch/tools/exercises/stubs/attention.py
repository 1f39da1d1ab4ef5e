"""Exercise 16 (attention): scaled dot-product attention with a mask and dropout (Vaswani et al. 2017, eq. 1).

forward(q, k, v, mask, words, dropout_p): q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) float64; mask None or
bool (Tq, Tk), True = may attend; dropout_p in [0, 1); words None when dropout_p is 0, else random uint16 words of
w's shape (..., Tq, Tk), drawn by the caller (randomness is an input, as in the engine's ops). Compute
    s = q k^T / sqrt(d);   w = softmax(s) along the keys, 0 where the mask is False;
    a = w * keep / (1 - dropout_p);   out = a v
where keep = keep_mask(words, dropout_p) when dropout_p > 0 (imported below: the engine's own mask, so that the check
sees the same one). A row of the mask with no True (a padding query) must give weights 0, out 0 and gradients 0,
never nan. backward(g) -> (dq, dk, dv, None, None) (no gradient for the mask or the words).

Derive: run the forward in reverse, one line each: the matmul rule (the matmul exercise) for out = a v, the
dropout scaling, the softmax rule (the softmax exercise) for w = softmax(s), the matmul rule and the constant
1/sqrt(d) for s.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)). The check draws a fully masked query row and scores near 1000 too.

Check: python3 -m minitorch.tools.exercises check attention --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint attention
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function
from minitorch.ops.dropout import keep_mask  # noqa: F401  (the dropout mask)


class ScaledDotProductAttention(Function):
    def forward(self, q, k, v, mask, words, dropout_p):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
