"""Matrix product with NumPy's @ semantics (batched, broadcast batch dims, 1-D operands)."""
import operator

import numpy as np

from .. import backend
from ..core import Function, fresh_gradients
from .array_ops import HALF, swap_last


def mm(a, b):
    """a @ b. float16 NumPy arrays are multiplied in float32 and rounded once, as cuBLAS multiplies float16
    (CUBLAS_COMPUTE_32F): NumPy's own float16 product is a loop some 30 times slower than its float32 BLAS."""
    if type(a) is np.ndarray and a.dtype == HALF and b.dtype == HALF:
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    return a @ b

def _as_arrays(a, b):
    """Both operands as backend arrays (a list or number takes the other's float dtype); refuses int @ float."""
    if type(a) is type(b) and hasattr(a, "dtype") and a.dtype.kind == b.dtype.kind == "f":   # (every step's case)
        return a, b
    a_is, b_is = backend.is_array(a), backend.is_array(b)
    if not (a_is and b_is):
        like = a if a_is else b
        xp, dtype = backend.xp_of(like), like.dtype if like.dtype.kind == "f" else None
        a, b = (a if a_is else xp.asarray(a, dtype=dtype)), (b if b_is else xp.asarray(b, dtype=dtype))
    if (a.dtype.kind == "f") != (b.dtype.kind == "f"):
        raise TypeError(f"matmul: cannot multiply {a.dtype} {tuple(a.shape)} by {b.dtype} {tuple(b.shape)}; "
                        f"convert the integer one with .float() (or .double())")
    return a, b


class MatMul(Function):
    """out = a @ b.  da = g @ b^T,  db = a^T @ g  (batch dims summed back by the engine's unbroadcast)."""
    autocast_to = "half"

    def forward(self, a, b):
        a, b = _as_arrays(a, b)
        if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
            raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not fit "
                             f"(the last dim of the first must equal the "
                             f"{'first' if b.ndim == 1 else 'second-to-last'} "
                             f"dim of the second)")
        self.save_for_backward(a, b)
        if a.ndim > 2 and b.ndim == 2:  # x @ W: fold the batch dims into rows, one large GEMM instead of many small
            return mm(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[1:])
        return mm(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        if a.ndim > 2 and b.ndim == 2:  # rows again: db = a^T g is one GEMM, with no (batch, in, out) intermediate
            need_a, need_b = self.needs_input_grad
            g_rows = g.reshape(-1, g.shape[-1])
            ga = mm(g_rows, b.T).reshape(a.shape) if need_a else None
            gb = mm(a.reshape(-1, a.shape[-1]).T, g_rows) if need_b else None
            return ga, gb
        # 1-D operands act as a row (a) or a column (b); restore those axes so one formula serves every case
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:  # first the column axis, so that a 0-d g (1-D @ 1-D) gains the row axis after it
            g = g[..., None]
        if a.ndim == 1:
            g = g[..., None, :]
        need_a, need_b = self.needs_input_grad
        ga = gb = None
        if need_a:
            ga = mm(g, swap_last(b2))
            if a.ndim == 1:
                ga = ga.reshape(-1, a.shape[0]).sum(0)
        if need_b:
            gb = mm(swap_last(a2), g)
            if b.ndim == 1:
                gb = gb.reshape(-1, b.shape[0]).sum(0)
        return ga, gb


@fresh_gradients   # dx (a view of its product), dw and db: arrays it makes
class Linear(Function):
    """out = x @ w^T + b: x (..., in), w (out, in), b (out,) or None -> (..., out); one node where `x @ w.T + b`
    would make three (a transpose, a product, a sum), each with its Python cost on every step.
        dx = g @ w,   dw = g^T x,   db = sum(g)        (g and x as (rows, features): all batch dims are rows)
    """
    autocast_to = "half"

    def forward(self, x, w, b):
        need_x, need_w, _ = self.needs_input_grad
        self.save_for_backward(x if need_w else None, w if need_x else None)
        product = mm if x.dtype == HALF else operator.matmul   # (float32: @ itself, no Python call on every step)
        out = product(x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + w.shape[:1])
        return out if b is None else out + b

    def backward(self, g):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        g_rows = g.reshape(-1, g.shape[-1])
        product = mm if g.dtype == HALF else operator.matmul
        dx = product(g_rows, w).reshape(g.shape[:-1] + w.shape[1:]) if need_x else None
        dw = product(g_rows.T, x.reshape(-1, x.shape[-1])) if need_w else None
        db = None
        if need_b:   # (NumPy's float16 column sum adds in float16; CuPy's in float32, as here)
            db = g_rows.sum(0) if type(g) is not np.ndarray or g.dtype != HALF else \
                g_rows.sum(0, dtype=np.float32).astype(g.dtype)
        return dx, dw, db
