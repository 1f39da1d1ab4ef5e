"""Edge inputs as PyTorch treats them: 0-d and empty tensors through every op that takes a dim (the op table's
reductions and reshapes, softmax, log-softmax, max(dim), argmax), and Python ints beyond int64 given to mt.tensor.

Each case is checked here without PyTorch (a 0-d case's value and gradient against a NumPy form and central
differences; an empty case's shape; an error of PyTorch's kind, never NumPy's own), and against PyTorch where it is
installed: the same value and gradient, or an error of the same type."""
import itertools
import warnings

import numpy as np
import pytest
from finite_differences import vjp
from op_table import OPS, np_axis, np_squeeze

import minitorch as mt
import minitorch.functional as F

try:
    import torch
except ImportError:   # the comparisons with PyTorch are skipped; the checks of their own still run
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (python3 -m pip install torch); "
                                                          "the comparison with it is skipped")


def np_softmax(x, dim):
    """Softmax along dim in NumPy, a 0-d x as one row of one element."""
    z = np.atleast_1d(x)
    e = np.exp(z - z.max(axis=dim, keepdims=True, initial=-np.inf))   # (initial: an empty row has no max)
    return (e / e.sum(axis=dim, keepdims=True)).reshape(x.shape)


def np_reduced(f):
    """A NumPy reduction f(x, axis, keepdims) as the op table writes it: a 0-d array has no axis to reduce."""
    return lambda x, dim, keepdim: f(x, axis=np_axis(x, dim), keepdims=keepdim)


def np_argmax(x, dim, keepdim):
    """argmax in NumPy: index 0 of a 0-d array, which has one element."""
    return np.zeros((), np.int64) if x.ndim == 0 else np.argmax(x, axis=dim, keepdims=keepdim)


def torch_all_dims(dim, x):
    return tuple(range(x.ndim)) if dim is None else dim


# name -> (minitorch form, NumPy form, PyTorch form, the options of a shape's cases); forms f(x, **options)
def reduce_options(ndim):
    dims = [None, *range(-max(ndim, 1), max(ndim, 1)), max(ndim, 1), -max(ndim, 1) - 1]   # the last two: out of range
    return [{"dim": d, "keepdim": k} for d, k in itertools.product(dims, (False, True))]


def one_dim_options(ndim, keepdim=True):
    dims = [*range(-max(ndim, 1), max(ndim, 1)), max(ndim, 1)]
    return [{"dim": d, "keepdim": k} for d, k in itertools.product(dims, (False, True) if keepdim else (False,))]


def dim_options(ndim):
    return [{"dim": o["dim"]} for o in one_dim_options(ndim, False)]


EDGE_OPS = {
    "sum": (OPS["sum"].f_mt, OPS["sum"].f_np,
            lambda x, dim, keepdim: x.sum(dim=torch_all_dims(dim, x), keepdim=keepdim), reduce_options),
    "mt.sum": (OPS["mt.sum"].f_mt, OPS["mt.sum"].f_np,
               lambda x, dim, keepdim: torch.sum(x, dim=torch_all_dims(dim, x), keepdim=keepdim), reduce_options),
    "mean": (OPS["mean"].f_mt, OPS["mean"].f_np,
             lambda x, dim, keepdim: x.mean(dim=torch_all_dims(dim, x), keepdim=keepdim), reduce_options),
    "mt.mean": (OPS["mt.mean"].f_mt, OPS["mt.mean"].f_np,
                lambda x, dim, keepdim: torch.mean(x, dim=torch_all_dims(dim, x), keepdim=keepdim), reduce_options),
    "amax": (OPS["amax"].f_mt, OPS["amax"].f_np,
             lambda x, dim, keepdim: x.amax(dim=() if dim is None else dim, keepdim=keepdim), reduce_options),
    "max": (lambda x, dim, keepdim: x.max(dim, keepdim=keepdim).values, np_reduced(np.max),
            lambda x, dim, keepdim: x.max(dim, keepdim=keepdim).values, one_dim_options),
    "max()": (lambda x: x.max(), lambda x: np.max(x), lambda x: x.max(), lambda ndim: [{}]),
    "argmax": (lambda x, dim, keepdim: x.argmax(dim, keepdim=keepdim), np_argmax,
               lambda x, dim, keepdim: x.argmax(dim, keepdim=keepdim),
               lambda ndim: [{"dim": None, "keepdim": False}, *one_dim_options(ndim)]),
    "softmax": (lambda x, dim: F.softmax(x, dim), lambda x, dim: np_softmax(x, dim % max(x.ndim, 1)),
                lambda x, dim: torch.softmax(x, dim), lambda ndim: dim_options(ndim)),
    "log_softmax": (lambda x, dim: F.log_softmax(x, dim),
                    lambda x, dim: np.log(np_softmax(x, dim % max(x.ndim, 1))),
                    lambda x, dim: torch.log_softmax(x, dim), lambda ndim: dim_options(ndim)),
    "squeeze": (OPS["squeeze"].f_mt, lambda x, dim: np_squeeze(x, None if x.ndim == 0 else dim),
                lambda x, dim: x.squeeze() if dim is None else x.squeeze(dim),
                lambda ndim: [{"dim": d} for d in [None, *range(-max(ndim, 1), max(ndim, 1)), max(ndim, 1)]]),
    "unsqueeze": (OPS["unsqueeze"].f_mt, OPS["unsqueeze"].f_np, lambda x, dim: x.unsqueeze(dim),
                  lambda ndim: [{"dim": d} for d in range(-ndim - 2, ndim + 2)]),
}
VALUES = {(): [0.7, -1.3], (0,): [None], (2, 0): [None], (0, 3): [None]}   # 0-d values; empty inputs have none
CASES = [(name, shape, value, options) for name, (_, _, _, option_list) in EDGE_OPS.items()
         for shape, values in VALUES.items() for value in values for options in option_list(len(shape))]
# what NumPy says where PyTorch has its own error: none of it may reach the user
NUMPY_WORDS = ("zero-size array", "tuple index out of range", "empty sequence", "axis", "no identity")


def edge_input(shape, value):
    return np.full(shape, 0.0 if value is None else value)


def run(f, x, options):
    """f(x, **options), or the exception it raised."""
    try:
        return f(x, **options)
    except Exception as e:   # noqa: BLE001 (the kind is what is compared)
        return e


def weights(shape):
    """Fixed weights w of the loss sum(w * out): each element's gradient differs."""
    return np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)


def test_every_case_runs_or_raises_an_error_of_pytorchs_kind_not_numpys():
    counts = {"0-d": 0, "empty": 0}
    for name, shape, value, options in CASES:
        f_mt, f_np, _, _ = EDGE_OPS[name]
        x = edge_input(shape, value)
        t = mt.tensor(x, dtype=mt.float64, requires_grad=True)
        out = run(f_mt, t, options)
        counts["0-d" if shape == () else "empty"] += 1
        where = f"{name} of shape {shape}, {options}"
        if isinstance(out, Exception):
            assert isinstance(out, (IndexError, RuntimeError)), (where, out)
            assert not any(w in str(out) for w in NUMPY_WORDS), (where, out)
            continue
        with warnings.catch_warnings():   # NumPy's mean of nothing is nan with a warning; minitorch's without
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.asarray(f_np(x, **options))
        assert out.shape == expected.shape, (where, out.shape, expected.shape)
        np.testing.assert_allclose(out.numpy(), expected, equal_nan=True, err_msg=where)
        if out.dtype.kind != "f":   # argmax: an index, no gradient
            continue
        w = weights(out.shape)
        (out * mt.tensor(w)).sum().backward()
        grad = np.zeros(shape) if t.grad is None else t.grad.numpy()
        if shape == ():   # central differences of the NumPy form, computed without the code under test
            reference, = vjp(lambda a: f_np(a, **options), [x], w)
        else:             # an empty input has no element to differentiate
            reference = np.zeros(shape)
        np.testing.assert_allclose(grad, reference, atol=1e-6, err_msg=where)
    print(f"edge inputs tried: {counts['0-d']} 0-d and {counts['empty']} empty cases over {len(EDGE_OPS)} ops")
    assert counts["0-d"] > 50 and counts["empty"] > 50


def test_softmax_of_a_0d_tensor_is_one_with_gradient_zero(device):
    for f, value in ((F.softmax, 1.0), (F.log_softmax, 0.0)):
        for dim in (0, -1):
            x = mt.tensor(2.5, dtype=mt.float64, requires_grad=True, device=device)
            y = f(x, dim)
            assert y.shape == () and y.item() == value
            y.backward()
            assert x.grad.item() == 0.0
        empty = mt.zeros(2, 0, device=device, requires_grad=True)   # no row to normalise, on the GPU's kernels too
        y = f(empty, -1)
        y.sum().backward()
        assert y.shape == (2, 0) and empty.grad.shape == (2, 0)
        with pytest.raises(IndexError, match="dim 1 is out of range for a tensor with 0 dims"):
            f(mt.tensor(2.5), 1)


def test_a_maximum_of_no_element_is_pytorchs_error():
    with pytest.raises(IndexError) as e:
        mt.zeros(2, 0).amax(dim=1)
    assert str(e.value) == "max(): dim 1 of the tensor of shape (2, 0) is empty (size 0); a maximum needs an element"
    with pytest.raises(RuntimeError) as e:
        mt.zeros(0).max()
    assert str(e.value) == "max(): the tensor of shape (0,) is empty; give the dim to reduce"
    assert mt.zeros(2, 0).amax(dim=0).shape == (0,)   # reducing a dim of size 2 is fine
    assert np.isnan(mt.zeros(0).mean().item())


@requires_torch
@pytest.mark.parametrize("name", sorted(EDGE_OPS))
def test_each_case_as_pytorch(name):
    f_mt, _, f_torch, _ = EDGE_OPS[name]
    for _, shape, value, options in [c for c in CASES if c[0] == name]:
        x = edge_input(shape, value)
        t, tt = mt.tensor(x, dtype=mt.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = run(f_mt, t, options), run(f_torch, tt, options)
        where = f"{name} of shape {shape}, {options}"
        if isinstance(expected, Exception):
            assert isinstance(out, type(expected)), (where, out, expected)
            continue
        assert not isinstance(out, Exception), (where, out, expected)
        assert out.shape == tuple(expected.shape), (where, out.shape, expected.shape)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), equal_nan=True, err_msg=where)
        if not expected.dtype.is_floating_point:
            continue
        w = weights(out.shape)
        (out * mt.tensor(w)).sum().backward()
        (expected * torch.tensor(w)).sum().backward()
        grad = np.zeros(shape) if t.grad is None else t.grad.numpy()
        reference = np.zeros(shape) if tt.grad is None else tt.grad.numpy()
        np.testing.assert_allclose(grad, reference, atol=1e-12, err_msg=where)


# ----- Python ints beyond int64 -----
HUGE = [2 ** 70, -2 ** 70, 2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1, [1, 2 ** 70], [[1, 2], [3, 2 ** 64]], [True, 2 ** 70],
        [1.5, 2 ** 70], [2 ** 63, 1], [[2 ** 63], [-1]], [1.5, 2 ** 63]]
# (float16 is left out: a float beyond its range becomes inf as in PyTorch, but with NumPy's RuntimeWarning, as any
# float does in mt.tensor)
DTYPES = [None, "float32", "float64", "int64", "int32", "bool"]


def test_an_int_beyond_int64_overflows_unless_a_float_is_asked():
    # [2 ** 63, 1] and [[2 ** 63], [-1]]: NumPy rounds them to float64, which must not hide the overflow
    for data in (2 ** 70, [1, 2 ** 70], 2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1, [2 ** 63, 1], [[2 ** 63], [-1]]):
        for dtype in (None, "int64", "int32"):
            with pytest.raises(ValueError, match=r"the integer -?\d+ does not fit in int64") as e:
                mt.tensor(data, dtype=dtype)
            assert isinstance(e.value, RuntimeError)   # PyTorch 1's kind too
    with pytest.raises(ValueError) as e:
        mt.tensor(2 ** 70)
    assert str(e.value) == ("tensor: the integer 1180591620717411303424 does not fit in int64 (-9223372036854775808 to "
                            "9223372036854775807): Overflow when unpacking long long; give dtype=mt.float32 "
                            "(or float64) to convert it")
    assert mt.tensor(2 ** 70, dtype=mt.float32).item() == np.float32(2.0 ** 70)
    assert mt.tensor([2 ** 70, 1], dtype=mt.float64).tolist() == [2.0 ** 70, 1.0]
    assert mt.tensor([1.5, 2 ** 70]).dtype == np.float32          # a float in the data makes it float
    assert mt.tensor([2 ** 63, 1], dtype=mt.float32).tolist() == [2.0 ** 63, 1.0]
    assert mt.tensor([1.5, 2 ** 63]).tolist() == [1.5, 2.0 ** 63]
    assert mt.tensor(2 ** 70, dtype="bool").item() is True
    assert mt.tensor(-2 ** 63).item() == -2 ** 63 and mt.tensor(2 ** 63 - 1).dtype == np.int64   # the ends fit
    with pytest.raises(OverflowError):   # no float holds it, as PyTorch
        mt.tensor(10 ** 400, dtype=mt.float64)


@requires_torch
def test_ints_beyond_int64_as_pytorch():
    tried = 0
    for data, dtype in itertools.product(HUGE, DTYPES):
        tried += 1
        out = run(lambda d, **kw: mt.tensor(d, **kw), data, {"dtype": dtype})
        expected = run(lambda d, **kw: torch.tensor(d, **kw), data, {"dtype": getattr(torch, dtype) if dtype else None})
        where = f"tensor({data}, dtype={dtype})"
        if isinstance(expected, Exception):
            assert isinstance(out, type(expected)), (where, out, expected)
            continue
        assert not isinstance(out, Exception), (where, out)
        np.testing.assert_array_equal(out.numpy().astype(np.float64), expected.double().numpy(), err_msg=where)
    print(f"huge-integer inputs tried against PyTorch: {tried}")
