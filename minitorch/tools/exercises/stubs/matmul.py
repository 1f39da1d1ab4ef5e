"""Exercise 5 (matmul): the matrix product C = A B, batched.

forward(a, b): a (..., n, k) and b (..., k, m), float64, batch dims that broadcast (a (2, 3, 4) with b (4, 5) is a
batch of two products) -> a @ b, shape (..., n, m). backward(g) -> (dA, dB) for g = dL/dC of C's shape.

Derive from one element: C_ij = sum_k A_ik B_kj, so dL/dA_ik = sum_j G_ij B_kj, which is the (i, k) element of
G B^T; and dL/dB_kj = sum_i A_ik G_ij, the (k, j) element of A^T G. Transpose the last two dims only
(x.swapaxes(-1, -2)); the engine sums the broadcast batch dims back.

Check: python3 -m minitorch.tools.exercises check matmul --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint matmul
"""
from minitorch.autograd import Function


class MatMul(Function):
    def forward(self, a, b):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError
