"""The op contract (minitorch/core/function.py): every op declares what it saves, backward returns one gradient per
input, and nothing outside the declaration holds a float array for backward (docs/design.md, "Writing an op")."""
import importlib
import pkgutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import OPS

import minitorch as mt
import minitorch.functional as F
from minitorch import backend
from minitorch.core import KERNELS, Function, reference_of
from minitorch.core.function import CtxNode, View
from tests.graph_ops import ops_of

# kept: what forward kept for speed, released with saved and dropped under create_graph (core/function.py)
BOOKKEEPING = {"parents", "saved_tensors", "kept", "_forward_stack"}


def undeclared_float_arrays(op):
    """Names of op's attributes that hold a float array (or one inside a tuple or list) not in op.saved_tensors."""
    declared = {id(v) for v in op.saved_tensors}
    found = []
    for name, value in vars(op).items():
        if name in BOOKKEEPING:
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if backend.is_array(item) and item.dtype.kind in "fc" and id(item) not in declared:
                found.append(name)
    return found


def fused_calls(device):
    """name -> (fn(*tensors), input shapes): the fused ops, their kernels' forms and the layers built on ops (the
    primitives come from tests/op_table.py)."""
    rng = np.random.default_rng(0)
    mask = mt.tensor(rng.random((3, 4)) > 0.5, device=device)
    return {
        "softmax": (lambda a: F.softmax(a, dim=-1), [(3, 4)]),
        "log_softmax": (lambda a: F.log_softmax(a, dim=0), [(3, 4)]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
        "layer_norm without affine": (lambda x: F.layer_norm(x, (4,)), [(3, 4)]),
        "cross_entropy": (lambda a: F.cross_entropy(a, mt.tensor([1, 0, 3], device=device)), [(3, 4)]),
        "cross entropy none, smoothed": (lambda a: F.cross_entropy(a, mt.tensor([1, 0, 3], device=device),
                                                                    label_smoothing=0.1, reduction="none"), [(3, 4)]),
        "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask), [(2, 3, 8), (2, 4, 8), (2, 4, 8)]),
        "sdpa with dropout": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask, dropout_p=0.3),
                              [(2, 3, 8), (2, 4, 8), (2, 4, 8)]),
        "self_attention": (lambda qkv: F.self_attention(qkv), [(3, 2, 4, 8)]),
        "cross_attention": (lambda q, kv: F.cross_attention(q, kv), [(2, 3, 8), (2, 2, 4, 8)]),
        "lstm_cell": (lambda gates, c: mt.cat(list(F.lstm_cell(gates, c)), dim=-1), [(2, 12), (2, 3)]),
        "lstm_cell, a padded row": (lambda gates, c, h: mt.cat(list(F.lstm_cell(gates, c, h, np.array([[1], [0]]) > 0)),
                                                               dim=-1), [(2, 12), (2, 3), (2, 3)]),
        "relu, bias_relu, gelu, dropout": (lambda a, b: F.dropout_add(F.dropout(F.gelu(F.bias_relu(a, b).relu()),
                                                                                0.2), a, 0.3), [(3, 4), (4,)]),
        "checkpoint": (lambda a: mt.utils.checkpoint.checkpoint(lambda x: (x * x).tanh(), a), [(3, 4)]),
        "a Function in PyTorch's ctx form, two outputs": (lambda a: sum(t.sum() for t in _TwoOutputs.apply(a)),
                                                          [(3, 4)]),
        "getitem's backward, recorded": (lambda a: mt.grad((a[[0, 0, 2]] ** 2).sum(), a, create_graph=True)[0],
                                         [(3, 4)]),
    }


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def engine_functions():
    """Every Function subclass defined in minitorch (its modules imported first)."""
    for info in pkgutil.walk_packages(mt.__path__, "minitorch."):
        if ".tools." not in info.name and ".exercises" not in info.name and "distributed" not in info.name:
            importlib.import_module(info.name)
    return {c for c in _subclasses(Function) if c.__module__.startswith("minitorch.")
            and ".exercises" not in c.__module__}


class _TwoOutputs(mt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x, x.exp()

    @staticmethod
    def backward(ctx, g_square, g_exp):
        x, = ctx.saved_tensors
        return g_square * 2 * x + g_exp * x.exp()


def _graph(fn, shapes, device):
    rng = np.random.default_rng(1)
    leaves = [mt.tensor(rng.uniform(0.5, 2.0, s), dtype=np.float64, device=device, requires_grad=True)
              for s in shapes]
    return fn(*leaves)


def assert_declared(out, name):
    for op in ops_of(out):
        assert not undeclared_float_arrays(op), f"{name}: {type(op).__name__} keeps " \
                                                f"{undeclared_float_arrays(op)} outside save_for_backward"


DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not mt.cuda_available(), reason="needs CuPy and a GPU, or the CuPy stand-in")])]


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=3, derandomize=True)
@given(data=st.data())
def test_every_primitive_op_declares_the_float_arrays_its_backward_reads(name, data):
    inputs, options = data.draw(OPS[name].cases)
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    assert_declared(OPS[name].f_mt(*leaves, **options), name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(fused_calls("cpu")))
def test_every_fused_op_and_kernel_declares_the_float_arrays_its_backward_reads(name, device, monkeypatch):
    fn, shapes = fused_calls(device)[name]
    assert_declared(_graph(fn, shapes, device), name)
    if device == "cpu":  # the GPU kernels run on NumPy arrays too: swap them in for the CPU's
        for (reference, kernel_device), kernel in list(KERNELS.items()):
            if kernel_device == "cuda":
                monkeypatch.setitem(KERNELS, (reference, "cpu"), kernel)
        assert_declared(_graph(fn, shapes, device), name)


def test_every_function_in_the_engine_is_run_by_these_tests(monkeypatch):
    """Each Function subclass of minitorch (references and kernels) appears in op_table.py or fused_calls."""
    seen = {op.function for op in OPS.values()}
    for mode in ("kernels", "reference", "gpu kernels on numpy"):
        with mt.reference_ops() if mode == "reference" else pytest.MonkeyPatch.context() as m:
            if mode == "gpu kernels on numpy":
                for (reference, kernel_device), kernel in list(KERNELS.items()):
                    if kernel_device == "cuda":
                        m.setitem(KERNELS, (reference, "cpu"), kernel)
            for fn, shapes in fused_calls("cpu").values():
                seen.update(type(op) for op in ops_of(_graph(fn, shapes, "cpu")))
    seen |= {CtxNode} if any(issubclass(c, CtxNode) for c in seen) else set()   # (run as <Name>Backward)
    seen |= {View} if any(issubclass(c, View) for c in seen) else set()         # (a base: run as Reshape, ...)
    missing = engine_functions() - seen
    assert not missing, f"not run by these tests: {sorted(c.__name__ for c in missing)}"


def test_the_scan_catches_a_float_array_kept_outside_the_declaration():
    class KeepsItsOutput(Function):
        def forward(self, a):
            self.out = np.exp(a)   # read by backward, never declared
            return self.out

        def backward(self, g):
            return g * self.out

    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (op,) = ops_of(KeepsItsOutput.apply(x))
    assert undeclared_float_arrays(op) == ["out"]


class _TooFew(Function):
    def forward(self, a, b):
        return a * b

    def backward(self, g):
        return g


class _TooMany(Function):
    def forward(self, a):
        return a * 2

    def backward(self, g):
        return g * 2, g


@pytest.mark.parametrize("op, expected, got", [(_TooFew, 2, 1), (_TooMany, 1, 2)])
def test_a_backward_returning_the_wrong_number_of_gradients_is_refused(op, expected, got):
    xs = [mt.tensor([1.0, 2.0], requires_grad=True) for _ in range(expected)]
    y = op.apply(*xs).sum()
    with pytest.raises(RuntimeError, match=rf"function {op.__name__}.backward returned an incorrect number of "
                                           rf"gradients \(expected {expected}, got {got}\)"):
        y.backward()


def test_saved_tensors_are_the_graphs_tensors_under_create_graph():
    seen = []

    class Cube(Function):
        def forward(self, a):
            self.save_for_backward(a)
            return a ** 3

        def backward(self, g):
            a, = self.saved_tensors
            seen.append(type(a))
            return 3 * g * a * a

    x = mt.tensor([0.5, -2.0], dtype=np.float64, requires_grad=True)
    (g,) = mt.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = mt.grad(g.sum(), x)
    assert seen == [mt.Tensor]
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy())


def test_reference_ops_turns_the_kernels_off():
    x = mt.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    kernel_op = type(F.softmax(x, dim=-1)._op)
    with mt.reference_ops():
        reference_op = type(F.softmax(x, dim=-1)._op)
    assert reference_of(reference_op) is reference_op
    assert reference_of(kernel_op) is reference_op
