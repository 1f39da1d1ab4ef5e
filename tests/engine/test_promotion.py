"""PyTorch's type promotion (minitorch/promotion.py): every binary op over every pair of bool, int64, float32, float64
tensors (with dims and 0-d) and Python numbers, compared with PyTorch where it is installed; without it, properties
of the rule that a wrong table breaks (the category order, symmetry, only the operands' or the default dtype)."""
import itertools
import operator

import numpy as np
import pytest

import minitorch as mt
from minitorch.promotion import category

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: its promotion table is not at hand")

VALUES = {"bool": [True, False], "int64": [2, 3], "float32": [2.0, 3.0], "float64": [2.0, 3.0]}
TENSORS = [(dtype, shape) for dtype in VALUES for shape in ("dims", "0-d")]
NUMBERS = [True, 2, 2.5]
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv, "pow": operator.pow,
       "lt": operator.lt, "eq": operator.eq}


def make(lib, operand):
    """The operand in minitorch (lib=mt) or PyTorch (lib=torch): a tensor (dtype, shape) or a Python number."""
    if not isinstance(operand, tuple):
        return operand
    dtype, shape = operand
    values = VALUES[dtype] if shape == "dims" else VALUES[dtype][0]
    return lib.tensor(values, dtype=getattr(lib, dtype) if lib is torch else dtype)


def pairs():
    operands = TENSORS + NUMBERS
    return [(a, b) for a, b in itertools.product(operands, operands) if isinstance(a, tuple) or isinstance(b, tuple)]


def outcome(lib, op, a, b):
    """(dtype name, values as float64) of op(a, b), or ("error", None) where the library refuses it."""
    try:
        with np.errstate(all="ignore"):   # True / False is inf in both libraries
            out = OPS[op](make(lib, a), make(lib, b)) if op != "result_type" else None
        if op == "result_type":
            return str(lib.result_type(make(lib, a), make(lib, b))).replace("torch.", ""), None
    except (TypeError, RuntimeError, NotImplementedError, ValueError):
        return "error", None
    values = out.detach().double().numpy() if lib is torch else out.numpy().astype(np.float64)
    return str(out.dtype).replace("torch.", ""), values


def describe(x):
    return f"{x[0]} tensor ({x[1]})" if isinstance(x, tuple) else f"Python {type(x).__name__}"


@needs_torch
@pytest.mark.parametrize("op", list(OPS) + ["result_type"])
def test_every_pair_promotes_as_pytorch(op):
    differ = []
    for a, b in pairs():
        (ours, our_values), (theirs, their_values) = outcome(mt, op, a, b), outcome(torch, op, a, b)
        if ours != theirs or our_values is not None and not np.allclose(our_values, their_values, rtol=1e-6,
                                                                                equal_nan=True):
            differ.append(f"{describe(a)} {op} {describe(b)}: minitorch {ours} {our_values}, "
                          f"PyTorch {theirs} {their_values}")
    assert not differ, "\n".join(differ)


def operand_dtype(x):
    return np.dtype(x[0]) if isinstance(x, tuple) else None


@pytest.mark.parametrize("op", ["add", "mul", "div", "pow", "lt", "result_type"])
def test_the_rule_keeps_the_category_order(op):
    """Without PyTorch: the result's category is the highest operand's (a float number counting as floating, a
    division's at least floating), its dtype one of the tensors' or the default float32, the same for (a, b) and
    (b, a), and a comparison gives bool."""
    for a, b in pairs():
        dtype, _ = outcome(mt, op, a, b)
        if op == "pow" and dtype == "error":   # only a bool to a bool tensor's power is refused
            assert operand_dtype(b) == np.bool_ and (a is True or operand_dtype(a) == np.bool_), (a, b)
            continue
        if op == "lt":
            assert dtype == "bool", (a, b)
            continue
        kinds = [category(operand_dtype(x)) if isinstance(x, tuple) else category(np.result_type(type(x)))
                 for x in (a, b)]
        wanted = max(kinds + [2] if op == "div" else kinds)
        assert category(dtype) == wanted, (a, op, b, dtype)
        assert np.dtype(dtype) in {operand_dtype(a), operand_dtype(b), np.dtype(np.float32), np.dtype(np.int64),
                                   np.dtype(np.bool_)} - {None}, (a, op, b, dtype)
        swapped = outcome(mt, op, b, a)[0]
        assert swapped == dtype or op == "pow" and swapped == "error", (a, op, b)


def test_a_tensor_with_dims_outranks_a_0d_tensor_of_its_category():
    for op in ("add", "mul", "result_type"):
        assert outcome(mt, op, ("float32", "dims"), ("float64", "0-d"))[0] == "float32"
        assert outcome(mt, op, ("float32", "0-d"), ("float64", "dims"))[0] == "float64"
        assert outcome(mt, op, ("int64", "dims"), ("float64", "0-d"))[0] == "float64"   # it raises the category


def test_subtracting_a_bool_is_refused_with_pytorchs_advice():
    with pytest.raises(TypeError, match="logical_not"):
        mt.tensor([True]) - mt.tensor([False])
    with pytest.raises(TypeError, match="bool"):
        mt.tensor([1, 2]) - True


@pytest.mark.parametrize("other_dtype", ["int64", "float64", "bool"])
def test_the_gradient_flows_to_the_float_operand_in_its_own_dtype(other_dtype):
    w = mt.tensor([1.5, -2.0, 0.5], requires_grad=True)
    other = mt.tensor([3, 1, 2] if other_dtype != "bool" else [True, False, True], dtype=other_dtype)
    (w * other + w ** other).sum().backward()
    x, o = w.detach().numpy().astype(np.float64), other.numpy().astype(np.float64)
    assert w.grad.dtype == np.float32
    np.testing.assert_allclose(w.grad.numpy(), o + o * x ** (o - 1), rtol=1e-6)


def test_int_tensor_to_a_float_power_and_float_to_an_int_tensors_power():
    x = mt.tensor([1.0, 2.0, 3.0])
    assert (x ** mt.tensor([2, 3, 1])).tolist() == [1.0, 8.0, 3.0]
    assert (x ** mt.tensor([2, 3, 1])).dtype == np.float32
    assert (mt.tensor([4, 9]) ** 0.5).dtype == np.float32
    assert (mt.tensor([7, 8]) / mt.tensor([2, 2])).tolist() == [3.5, 4.0]
