"""PyTorch's type promotion, the one rule every binary op and `result_type` use.

Dtypes fall in categories, bool < integer < floating; an op's result takes the highest category among its operands,
and within it the widest dtype of the operands that have that category. Operands weigh in three tiers: tensors with
dims, 0-d tensors, then Python numbers. A lower tier decides the dtype only when it raises the category, and a Python
float then gives the default float dtype (float32): int64 tensor * 2.5 is float32, float32 tensor * float64 0-d
tensor is float32, int64 tensor + 0-d float64 tensor is float64. True division always gives a floating result
(int / int is float32). A comparison compares in the promoted dtype and gives bool.
"""
import numpy as np

from . import backend
from .core import Value

DEFAULT_FLOAT = np.dtype(np.float32)
BOOL, INT64 = np.dtype(np.bool_), np.dtype(np.int64)


def category(dtype):
    """0 for bool, 1 for integers, 2 for floating point."""
    return {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}[np.dtype(dtype).kind]


def promote_types(type1, type2):
    """The dtype two dtypes promote to (torch.promote_types): the one of higher category, else the wider one
    (int64 with float32 is float32, where NumPy says float64)."""
    type1, type2 = np.dtype(type1), np.dtype(type2)
    if category(type1) != category(type2):
        return type1 if category(type1) > category(type2) else type2
    return np.promote_types(type1, type2)


def _dtype_and_tier(x):
    """(dtype, tier) of an operand: tier 2 a tensor or array with dims, 1 a 0-d one, 0 a Python number."""
    if isinstance(x, Value):
        x = x.data
        if isinstance(x, np.generic):   # a tensor's data after a NumPy reduction: 0-d
            return x.dtype, 1
    if backend.is_array(x):
        return x.dtype, 2 if x.ndim else 1
    if isinstance(x, np.generic):   # a NumPy scalar counts as the Python number it holds
        x = x.item()
    if isinstance(x, bool):
        return BOOL, 0
    if isinstance(x, int):
        return INT64, 0
    if isinstance(x, float):
        return DEFAULT_FLOAT, 0
    dtype = np.asarray(x).dtype   # a list: as the array NumPy makes of it
    if dtype.kind not in "biufc":
        raise TypeError(f"result_type: expected a Tensor or a number, got {type(x).__name__}")
    return dtype, 2 if np.ndim(x) else 1


def _combine(higher, lower):
    """PyTorch's combine_categories: a lower tier's dtype counts only where it raises the category."""
    if higher is None or lower is not None and category(lower) > category(higher):
        return lower
    return higher


def result_type(*operands):
    """The dtype a binary op gives for these operands: Tensors, arrays or Python numbers (torch.result_type)."""
    tiers = [None, None, None]
    for x in operands:
        dtype, tier = _dtype_and_tier(x)
        tiers[tier] = dtype if tiers[tier] is None else promote_types(tiers[tier], dtype)
    return _combine(tiers[2], _combine(tiers[1], tiers[0]))


def true_division_type(*operands):
    """The result dtype of a / b: the promoted dtype, or the default float dtype where that is bool or integer."""
    dtype = result_type(*operands)
    return dtype if category(dtype) >= 2 else DEFAULT_FLOAT


__all__ = ["result_type", "promote_types", "true_division_type", "category", "DEFAULT_FLOAT"]
