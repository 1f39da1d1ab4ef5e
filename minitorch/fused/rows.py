"""The speed tricks of the fused ops' forward passes, named, so that each op's code reads as its derivation.

A forward works on arrays of rows (M, n): a row's mean, its dot product with another row, and row blocks that stay in
the CPU's cache between passes. Each helper says why it beats the plain NumPy expression. (Arrays only: a backward,
which runs on Tensors too under create_graph=True, uses minitorch.ops.array_ops.)
"""
from .. import backend

BLOCK_BYTES = 1 << 20  # row blocks of about 1 MB stay in the L2 cache between the passes over them


def row_sum(x, ones=None):
    """x (M, n) -> (M,) sums of the rows, as a matrix-vector product with ones: one BLAS call that reads x once,
    faster than NumPy's sum along the last axis. A loop over row blocks passes its `ones` (n,) to make it once."""
    return x @ (backend.xp_of(x).ones(x.shape[1], x.dtype) if ones is None else ones)


def row_mean(x):
    """x (M, n) -> (M,) means of the rows (a matrix-vector product with 1/n, as row_sum)."""
    return x @ backend.xp_of(x).full(x.shape[1], 1.0 / x.shape[1], x.dtype)


def row_dot(a, b):
    """a, b (M, n) -> (M,) dot product of each row of a with the same row of b, without the (M, n) product array."""
    return backend.xp_of(a).einsum("ij,ij->i", a, b)


def row_blocks(n_rows, row_bytes, device):
    """Row slices covering range(n_rows): blocks of about BLOCK_BYTES on the CPU, so that every pass over a block
    after the first reads from cache rather than memory; one block on a GPU, where each pass is one kernel."""
    step = max(1, n_rows if device != "cpu" else BLOCK_BYTES // max(row_bytes, 1))
    return [slice(i, i + step) for i in range(0, n_rows, step)]

