"""Tensor features the tutorials reach for, held to PyTorch: the graph as grad_fn.next_functions shows it, min and max
(values, indices, dtypes, gradients with ties, errors), Python's conversions of one-element tensors (int, float,
bool, list indices), the in-place shape ops (unsqueeze_, squeeze_, t_, transpose_) and the torch.onnx module."""
import operator

import numpy as np
import pytest

import minitorch as mt

torch = pytest.importorskip("torch")


def both(array, requires_grad=False):
    """The same float64 values as a minitorch and a PyTorch tensor."""
    return (mt.tensor(array, dtype=mt.float64, requires_grad=requires_grad),
            torch.tensor(array, dtype=torch.float64, requires_grad=requires_grad))


def outcome(fn):
    """fn()'s value, or the class of the exception it raised."""
    try:
        return fn()
    except Exception as e:   # noqa: BLE001 (the class is what is compared)
        return type(e)


# ----- grad_fn.next_functions -----
def shown(node, leaves, seen=None):
    """The graph below node as PyTorch prints it, as nested tuples: (name, ((child, index), ...)); a leaf's
    AccumulateGrad by the position of its variable in `leaves`; None for an input without a gradient."""
    if node is None:
        return None
    if type(node).__name__ == "AccumulateGrad":
        return ("leaf", next(i for i, t in enumerate(leaves) if t is node.variable))
    return (node.name(), tuple((shown(child, leaves), k) for child, k in node.next_functions))


def test_next_functions_show_the_graph_as_pytorchs():
    (x, tx), (w, tw) = both([1.0, -2.0, 3.0], True), both([0.5, 0.25, 2.0], True)
    (c, tc) = both([3.0, 4.0, 5.0])   # needs no gradient: (None, 0)

    def program(lib, x, w, c):
        h = (x * w).tanh() + c * x
        return (h.exp().sum() - (h / c).mean()) * w.sum()

    ours, theirs = program(mt, x, w, c), program(torch, tx, tw, tc)
    assert shown(ours.grad_fn, [x, w]) == shown(theirs.grad_fn, [tx, tw])
    mul = (x * c).grad_fn.next_functions
    assert mul[1] == (None, 0) and type(mul[0][0]).__name__ == "AccumulateGrad" and mul[0][0].variable is x
    # one AccumulateGrad per leaf while it is held, as PyTorch's
    assert (x * c).grad_fn.next_functions[0][0] is (x + 1).grad_fn.next_functions[0][0]
    assert mul[0][0].next_functions == () and mul[0][0].name() == (tx * tc).grad_fn.next_functions[0][0].name()
    assert repr((x * c).grad_fn).startswith("<MulBackward0 object at ")


def test_next_functions_name_which_output_of_an_op_with_several():
    def split_in_two(lib):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g0, g1):
                return 2 * g0 + 3 * g1
        return Split

    (x, tx) = both([1.0, 2.0], True)
    first, second = split_in_two(mt).apply(x)
    tfirst, tsecond = split_in_two(torch).apply(tx)
    ours, theirs = (second * 1).grad_fn.next_functions, (tsecond * 1).grad_fn.next_functions
    assert ours[0][1] == theirs[0][1] == 1 and ours[0][0] is second.grad_fn is first.grad_fn
    assert ours[0][0].name() == theirs[0][0].name() == "SplitBackward"
    assert (first.grad_fn.next_functions[0][0].variable is x) and theirs[1] == ours[1] == (None, 0)


# ----- min and max -----
TIES = [[[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 0.0]], [[5.0, 5.0, 5.0, 5.0], [-2.0, 4.0, 4.0, -2.0]]]   # (2, 2, 4)
FLIPPED = np.flip(TIES, 2).copy()   # TIES reversed along its last dim: equal to it in places (ties)


def forms(lib, t):
    """Each form of min and max, as the tensors whose gradients are compared (values; indices separately)."""
    return {"max()": t.max(), "min()": t.min(), "amax(1)": t.amax(1), "amin(-1, keepdim)": t.amin(-1, keepdim=True),
            "amax((0, 2))": t.amax((0, 2)), "max(dim=2)": t.max(dim=2).values,
            "min(0, keepdim)": t.min(0, keepdim=True).values, "mt.min(t, 1)": lib.min(t, 1).values,
            "mt.max(t)": lib.max(t), "min(other)": t.min(lib.tensor(FLIPPED, dtype=t.dtype)),   # ties: halves
            "mt.max(t, other)": lib.max(t, lib.tensor(FLIPPED, dtype=t.dtype))}


@pytest.mark.parametrize("form", list(forms(mt, mt.tensor(TIES, dtype=mt.float64))))
def test_min_and_max_values_and_gradients_with_ties_are_pytorchs(form):
    (x, tx) = both(TIES, True)
    ours, theirs = forms(mt, x)[form], forms(torch, tx)[form]
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    weights = np.arange(1.0, 1.0 + theirs.numel()).reshape(tuple(theirs.shape))
    (ours * mt.tensor(weights, dtype=mt.float64)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False), (2, True)])
def test_min_and_max_along_a_dim_give_values_and_indices_as_pytorchs(name, dtype, dim, keepdim):
    data = np.array(TIES).astype(dtype)
    ours = getattr(mt.tensor(data), name)(dim, keepdim=keepdim)
    theirs = getattr(torch.tensor(data), name)(dim, keepdim=keepdim)
    for a, b in ((ours.values, theirs.values), (ours.indices, theirs.indices), (ours[0], theirs[0])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert str(a.dtype) == str(b.dtype).removeprefix("torch.")
    assert type(ours).__name__ == name and ours._fields == ("values", "indices")
    arg = f"arg{name}"
    assert getattr(mt.tensor(data), arg)(dim).tolist() == getattr(torch.tensor(data), arg)(dim).tolist()


def test_min_and_max_of_a_0d_tensor_and_their_errors_are_pytorchs():
    for name in ("max", "min"):
        ours, theirs = getattr(mt.tensor(3.0), name)(0), getattr(torch.tensor(3.0), name)(0)
        assert (ours.values.item(), ours.indices.item()) == (theirs.values.item(), theirs.indices.item())
        cases = [lambda lib: getattr(lib.zeros(0), name)(), lambda lib: getattr(lib.zeros(0, 3), name)(0),
                 lambda lib: getattr(lib.zeros(2, 3), name)(2), lambda lib: getattr(lib.zeros(2, 3), name)(1.0),
                 lambda lib: getattr(lib.zeros(2, 3), name)(-3)]
        for case in cases:
            expected = outcome(lambda: case(torch))
            assert isinstance(expected, type) and outcome(lambda: case(mt)) is expected, (name, expected)
        assert getattr(mt.zeros(0, 3), name)(1).values.shape == tuple(getattr(torch.zeros(0, 3), name)(1).values.shape)


# ----- Python's conversions of a one-element tensor -----
CONVERSIONS = {
    "list[0-d int]": lambda lib: ["a", "b", "c"][lib.tensor(1)],
    "list[(1,) int]": lambda lib: ["a", "b", "c"][lib.tensor([2])],
    "list[(1, 1) int]": lambda lib: ["a", "b", "c"][lib.tensor([[0]])],
    "list[0-d bool]": lambda lib: ["a", "b"][lib.tensor(True)],
    "list[argmax]": lambda lib: ["a", "b", "c"][lib.tensor([0.1, 0.7, 0.2]).argmax(0)],
    "list[0-d float]": lambda lib: ["a", "b"][lib.tensor(1.0)],
    "index of two": lambda lib: operator.index(lib.tensor([1, 2])),
    "range(0-d)": lambda lib: list(range(lib.tensor(3))),
    "hex": lambda lib: hex(lib.tensor(255)),
    "int(2.7)": lambda lib: int(lib.tensor(-2.7)),
    "int((1, 1))": lambda lib: int(lib.tensor([[2.7]])),
    "int(bool)": lambda lib: int(lib.tensor(True)),
    "int of two": lambda lib: int(lib.tensor([1, 2])),
    "int(nan)": lambda lib: int(lib.tensor(float("nan"))),
    "int(inf)": lambda lib: int(lib.tensor(float("inf"))),
    "float(int)": lambda lib: float(lib.tensor(3)),
    "float(requires_grad)": lambda lib: float(lib.tensor(2.5, requires_grad=True)),
    "float of none": lambda lib: float(lib.tensor([])),
    "bool of none": lambda lib: bool(lib.tensor([])),
    "bool of two": lambda lib: bool(lib.tensor([0.0, 1.0])),
    "bool((1, 1))": lambda lib: bool(lib.tensor([[0.5]])),
    "bool(0.0)": lambda lib: bool(lib.tensor(0.0)),
}


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")
@pytest.mark.parametrize("case", list(CONVERSIONS))
def test_conversions_of_one_element_tensors_are_pytorchs(case):
    ours, theirs = outcome(lambda: CONVERSIONS[case](mt)), outcome(lambda: CONVERSIONS[case](torch))
    assert ours == theirs and type(ours) is type(theirs)


def test_conversions_read_a_device_tensor_when_asked(device):
    pred = mt.tensor([0.1, 0.7, 0.2], device=device)
    assert ["a", "b", "c"][pred.argmax(0)] == "b" and float(pred[1]) == pytest.approx(0.7) and bool(pred[0] < 1)
    assert int(mt.tensor([[4]], device=device)) == 4


# ----- in-place shape ops -----
INPLACE = [("unsqueeze_", (0,)), ("unsqueeze_", (-1,)), ("squeeze_", ()), ("squeeze_", (0,)), ("squeeze_", (1,)),
           ("t_", ()), ("transpose_", (0, 2)), ("transpose_", (-1, 0))]


@pytest.mark.parametrize("name,args", INPLACE)
@pytest.mark.parametrize("shape", [(1, 3, 1), (3, 2), (4,)])
def test_inplace_shape_ops_change_shape_and_version_as_pytorchs(name, args, shape):
    data = np.arange(float(np.prod(shape))).reshape(shape)
    ours, theirs = mt.tensor(data), torch.tensor(data)
    expected = outcome(lambda: getattr(theirs, name)(*args))
    got = outcome(lambda: getattr(ours, name)(*args))
    if isinstance(expected, type):
        assert got is expected
        return
    assert got is ours and ours.shape == tuple(theirs.shape) and ours._version == theirs._version
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name,args", INPLACE[:2] + INPLACE[5:])
def test_inplace_shape_ops_in_the_graph_give_pytorchs_gradients(name, args):
    data = np.arange(6.0).reshape(1, 2, 3) if name != "t_" else np.arange(6.0).reshape(2, 3)
    (x, tx) = both(data, True)
    results = []
    for lib, leaf in ((mt, x), (torch, tx)):
        y = leaf * 2
        before = y.grad_fn
        assert getattr(y, name)(*args) is y and y.grad_fn.next_functions[0][0] is before
        weights = lib.tensor(np.arange(1.0, 1.0 + y.numel()).reshape(tuple(y.shape)), dtype=y.dtype)
        (y.exp() * weights).sum().backward()
        results.append((tuple(y.shape), leaf.grad.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_inplace_shape_ops_refuse_a_leaf_and_date_saved_tensors_as_pytorchs():
    (x, tx) = both([[1.0, 2.0]], True)
    for name, args in INPLACE:
        assert outcome(lambda: getattr(x, name)(*args)) is outcome(lambda: getattr(tx, name)(*args)) is RuntimeError
    with mt.no_grad(), torch.no_grad():   # allowed there, and the leaf keeps requiring grad
        x.unsqueeze_(0), tx.unsqueeze_(0)
    assert x.shape == tuple(tx.shape) and x.requires_grad and x.grad_fn is None
    for lib, leaf in ((mt, x), (torch, tx)):
        h = leaf * 1
        product = h * h   # saves h, whose version the shape change bumps
        h.squeeze_(0)
        assert outcome(lambda: product.sum().backward()) is RuntimeError
        h.t_()
        h.exp().sum().backward()   # exp saved its output, not h: a later change of h's shape is no matter
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_a_shape_change_shows_in_the_base_and_views_share_the_version():
    ours, theirs = mt.zeros(2, 3), torch.zeros(2, 3)
    for base in (ours, theirs):
        view = base.reshape(6)
        view.unsqueeze_(0)
        view[0, 4] = 7.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours._version == theirs._version


# ----- torch.onnx -----
def test_onnx_is_importable_and_export_refuses_in_one_line(tmp_path):
    import minitorch.onnx
    assert minitorch.onnx is mt.onnx and not mt.onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError, match="no ONNX exporter.*state_dict.*torch.onnx.export") as error:
        mt.onnx.export(mt.nn.Linear(2, 2), (mt.zeros(1, 2),), tmp_path / "model.onnx")
    assert "\n" not in str(error.value) and not (tmp_path / "model.onnx").exists()
