"""Exercise 15 (layer_norm): LayerNorm over the last dims, with weight and bias.

forward(x, weight, bias, normalized_ndim, eps): x (..., *S) float64, normalised over its last normalized_ndim dims
S (n elements a row); weight and bias of shape S, or None (then y = xhat, or xhat + bias). Per row:
mean = mean(x), var = mean((x - mean)^2) (biased), rstd = 1 / sqrt(var + eps), xhat = (x - mean) rstd,
y = w xhat + b. backward(g) -> (dx, dw, db), dw and db None when weight and bias are None.

Derive: dw and db from the last line (summed over every row: one w serves them all). For dx, with gh = g w, write
d xhat_i / d x_j from d mean / d x_j and d rstd / d x_j, then sum over i: dx_j = sum_i gh_i d xhat_i / d x_j.
Save xhat and rstd, not x.

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check layer_norm --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint layer_norm
"""
import numpy as np  # noqa: F401

from minitorch.autograd import Function


class LayerNorm(Function):
    def forward(self, x, weight, bias, normalized_ndim, eps):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
