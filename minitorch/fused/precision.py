"""float16 inputs of the fused ops: their sums (softmax rows, LayerNorm's statistics, cross-entropy, attention's row
sums) run in float32, and what they return is in the inputs' dtype (cross-entropy's loss: float32, as under
PyTorch's autocast).

A float16 row of 4000 logits summed in float16 loses the small terms (float16 holds 11 bits), and exp of a float16
logit past 11 overflows; so a fused op widens float16 to float32 where it sums and exponentiates, and rounds once at
its output. wide and narrow do this on arrays and Tensors (the reference ops, which the CPU runs); in_body and
out_body inside a GPU kernel's body, where the cast costs no launch. Every other dtype passes through unchanged."""
import numpy as np

from ..ops import array_ops as A
from ..ops.array_ops import HALF


def wide(*arrays):
    """Each of arrays (arrays, Tensors or None) in float32 where it is float16, the others as they are: one argument
    gives one, several a tuple (as np.atleast_1d)."""
    for a in arrays:   # (every float32 step passes here: one call an op, no more than this loop)
        if a is not None and a.dtype == HALF:
            break
    else:
        return arrays if arrays[1:] else arrays[0]
    arrays = tuple(a if a is None or a.dtype != HALF else a.astype(np.float32) if A.is_array(a) else a.float()
                   for a in arrays)
    return arrays if arrays[1:] else arrays[0]


def narrow(a, dtype):
    """a in dtype (an input's dtype, which a result is given back in), or a itself when it has it."""
    if a is None or a.dtype == dtype:
        return a
    return a.astype(dtype) if A.is_array(a) else a.to(dtype=dtype)


def in_body(xp, x):
    """Inside a kernel body: x in float32 if it is a float16 array, else x (the sums then run in float32)."""
    return x.astype(xp.float32) if x.dtype == HALF else x


def out_body(value, like):
    """Inside a kernel body: value in the dtype of the input `like` (one rounding, at the output)."""
    return value.astype(like.dtype) if value.dtype != like.dtype else value


def scalar_type(dtype):
    """The type of a kernel's scalar arguments for inputs of dtype: float32 for float16, which computes in float32."""
    return np.float32 if np.dtype(dtype) == HALF else np.dtype(dtype).type
