"""Exercise 9 (matmul): the matrix product C = A B, batched.

forward(a, b): a (..., n, k) and b (..., k, m), float64, batch dims that broadcast (a (2, 3, 4) with b (4, 5) is a
batch of two products) -> a @ b, shape (..., n, m). backward(g) -> (dA, dB) for g = dL/dC of C's shape.

Derive from one element: C_ij = sum_k A_ik B_kj. Write dL/dA_ik and dL/dB_kj as sums over the other index and
recognise each as a matrix product (transpose the last two dims only: x.swapaxes(-1, -2)). Return each gradient in
its input's shape: sum it over broadcast batch dims (the grader does not do it for you).

Declare every array backward reads with self.save_for_backward(...) and read it back with self.saved_tensors (Python
values such as dims and flags stay plain attributes of self). The check runs your op as the engine runs it: in
backward, g and what you saved are read-only, and forward's inputs must not change (compute new arrays: g / b, not
g /= b); it also runs case 1 in float32, where the output and each gradient must be float32 too (new arrays in the
input's dtype: np.zeros(s, dtype=x.dtype)).

Check: python3 -m minitorch.tools.exercises check matmul --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint matmul
"""
from minitorch.autograd import Function


class MatMul(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
