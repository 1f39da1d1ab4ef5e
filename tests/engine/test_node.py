"""The graph node (core/function.py) kept small, the walk owning the gradients it keeps (core/backward.py), and one
Function mechanism whatever was imported before (core/ctx_form.py)."""
import contextlib
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_ops import ops_of
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import OPS

import minitorch as mt
from minitorch import backend
from minitorch.core import KERNELS, Function, View, reference_of, run_backward
from minitorch.core.function import FRESH

ROOT = Path(__file__).resolve().parents[2]
MOST_ATTRIBUTES = 10   # issue 54: DeZero's node holds inputs, outputs and a generation


class _One(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        return g * b, g * a


class _Two(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * 2, a * 3

    def backward(self, g2, g3):
        return 2 * g2 + 3 * g3


class _Reshape(View):
    def forward(self, a):
        return a.reshape(-1)

    def backward(self, g):
        return g.reshape(2, 3)


def _nodes():
    """Recorded nodes of every kind the engine makes, through ops that set no attribute of their own: one output, two
    outputs (and their Output nodes), a view, a node written in place, one with hooks and retain_grad, a released
    one."""
    a, b = (mt.tensor(np.ones((2, 3)), requires_grad=True) for _ in range(2))
    one, (two, three), flat = _One.apply(a, b), _Two.apply(a), _Reshape.apply(a)
    c = _One.apply(a, b)
    c.add_(1.0)                                      # write_in_place: c's node is Add's now
    hooked = _One.apply(a, b)
    hooked.register_hook(lambda g: g)
    hooked.retain_grad()
    released = _One.apply(a, b)
    released.sum().backward()
    nodes = [one._op, two._op, two._op.parents[0], three._op, flat._op, c._op, hooked._op, released._op]
    return nodes, (one, two, three, flat, c, hooked)   # (the tensors keep their nodes alive)


def function_attributes():
    """Function's attributes: what its class defines that is not a method (data, properties), and what the engine
    sets on a recorded node."""
    own = {name for name, value in vars(Function).items()
           if not name.startswith("__") and not inspect.isfunction(value)
           and not isinstance(value, (classmethod, staticmethod))}
    nodes, _ = _nodes()
    local = {"k", "n"}   # Output's own: which output it is, of how many (Output.of)
    return own | {name for node in nodes for name in vars(node)} - local


def test_function_has_at_most_ten_attributes():
    names = function_attributes()
    assert len(names) <= MOST_ATTRIBUTES, sorted(names)
    for kept in ("parents", "saved_tensors", "out_shape", "out_dtype", "seq", "seen"):   # DeZero's, and versions'
        assert kept in names


def test_the_count_sees_an_attribute_the_engine_would_add(monkeypatch):
    """The count reads the nodes, not a list: an attribute set on every recorded node is counted."""
    from minitorch.core import function
    record = function._record

    def noting(op, *args):
        record(op, *args)
        op.extra_note = 1
    monkeypatch.setattr(function, "_record", noting)
    assert "extra_note" in function_attributes()


FRESH_INTERPRETER = """
import sys, types
for name, folder in (("minitorch", "minitorch"), ("minitorch.core", "minitorch/core")):
    package = types.ModuleType(name)                  # the packages, without their __init__: nothing else is imported
    package.__path__ = [sys.argv[1] + "/" + folder]
    sys.modules[name] = package
assert "minitorch.core.ctx_form" not in sys.modules
from minitorch.core import function, versions         # the lowest module of the Function mechanism, first
from minitorch.core.backward import run_backward
import numpy as np


class T(function.Value):                              # the least a tensor is, for the engine
    __slots__ = ()

    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad, self._op, self._cut_by, self._hooks = data, requires_grad, None, \\
            None, None, None
        self._version_counter = versions.VersionCounter()

    out_shape = property(lambda self: self.data.shape)
    out_dtype = property(lambda self: self.data.dtype)

    @staticmethod
    def _new(array, requires_grad=False):             # (as Tensor's: the engine calls it on the class too)
        return T(array, requires_grad)


class Cube(function.Function):                        # PyTorch's form
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return T(x.data ** 3)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return T(3 * x.data ** 2 * g.data)


x = T(np.array([2.0, -1.0]), requires_grad=True)
y = Cube.apply(x)
run_backward([y], [np.ones(2)])
print(type(y._op).__name__, y.data.tolist(), x.grad.data.tolist())
"""


def test_a_ctx_form_function_works_in_a_fresh_interpreter_that_imports_only_the_function_module():
    """No patch on the class by a module imported later: function.py alone gives a class in PyTorch's form its apply."""
    done = subprocess.run([sys.executable, "-c", FRESH_INTERPRETER, str(ROOT)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["CubeBackward", "[8.0,", "-1.0]", "[12.0,", "3.0]"]


def _memory(values):
    """(name, array) of each array in values, one level into tuples and lists."""
    for name, value in values:
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, np.ndarray):
                yield name, item


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=4, derandomize=True, deadline=None)
@given(data=st.data())
def test_no_two_leaves_and_no_leaf_and_saved_tensor_share_memory(name, data):
    """On every op of the op table, with a gradient the caller holds: each leaf's .grad is memory of its own, shared
    with no other leaf's .grad or data, no array a node saved or kept, and not the caller's gradient."""
    inputs, options = data.draw(OPS[name].cases)
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    out = OPS[name].f_mt(*leaves, **options)
    outs = [t for t in (out if isinstance(out, tuple) else (out,)) if t.requires_grad]
    grads = [np.ones(t.shape) for t in outs]
    held = [("the caller's gradient", g) for g in grads]
    for t in outs:
        for op in ops_of(t):
            held += _memory([(f"{type(op).__name__}'s saved", op.saved_tensors), (f"{type(op).__name__}'s kept",
                                                                                     op.kept)])
    run_backward(outs, grads, retain_graph=True)
    got = [(f"leaf {i}'s .grad", x.grad.data) for i, x in enumerate(leaves) if x.grad is not None]
    for i, (what, array) in enumerate(got):
        others = got[i + 1:] + held + [(f"leaf {j}'s data", x.data) for j, x in enumerate(leaves)]
        for other, their in others:
            assert not np.shares_memory(array, their), f"{name}: {what} shares memory with {other}"


def test_a_gradient_a_hook_saw_is_not_kept_as_the_leafs_grad():
    """A leaf's hook may keep the Tensor it is handed: the leaf's .grad is then a copy, not that memory (the walk
    cannot know what the hook kept); so is a non-leaf's retain_grad()."""
    seen = []
    x = mt.tensor(np.ones(3), requires_grad=True)
    x.register_hook(seen.append)
    (x * mt.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert not np.shares_memory(seen[0].numpy(), x.grad.numpy())
    y = mt.tensor(np.ones(3), requires_grad=True) * 2
    y.retain_grad()
    y.register_hook(seen.append)
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 4.0, 4.0] and not np.shares_memory(seen[1].numpy(), y.grad.numpy())


def _leaf(shape, device, rng=np.random.default_rng(0)):
    return mt.tensor(rng.standard_normal(shape), dtype=np.float64, device=device, requires_grad=True)


FRESH_CALLS = {   # each op that declares fresh_gradients, recorded on leaves of a device
    "Linear": lambda device: mt.functional.linear(_leaf((2, 3, 4), device), _leaf((5, 4), device),
                                                  _leaf((5,), device)),
    "LayerNorm": lambda device: mt.functional.layer_norm(_leaf((3, 4), device), (4,), _leaf((4,), device),
                                                         _leaf((4,), device)),
    "Embedding": lambda device: mt.functional.embedding(mt.tensor([[0, 2], [2, 2]], device=device),
                                                        _leaf((3, 4), device), padding_idx=1),
}


def _fresh_cases():
    """(op class, device) for each class that declares fresh_gradients: a reference op on the CPU and on a GPU, a
    kernel on its own device."""
    for cls in sorted(FRESH, key=lambda cls: cls.__qualname__):
        kernel_devices = [d for (op, d), k in KERNELS.items() if k is cls]
        yield from ((cls, device) for device in kernel_devices or ["cpu", "cuda"])


@pytest.mark.parametrize("op_class, device", list(_fresh_cases()), ids=lambda x: getattr(x, "__name__", x))
def test_an_op_that_declares_fresh_gradients_returns_only_arrays_it_made(op_class, device):
    """fresh_gradients is a claim the walk trusts (a leaf keeps the array without a check): on each device it runs on
    (the GPU's on the CuPy stand-in), no array the op's backward returns shares memory with the gradient it received,
    what it saved or kept, or another array it returned."""
    reference = reference_of(op_class)
    if device == "cuda" and not mt.cuda_available():
        pytest.skip("a GPU kernel: needs CuPy and a GPU, or the CuPy stand-in")
    with mt.reference_ops() if op_class is reference else contextlib.nullcontext():   # (a reference op on a GPU)
        out = FRESH_CALLS[reference.__name__](device)
    node = out._op
    assert type(node) is op_class
    seen = []

    def hook(op, phase, args, options):
        result = op.forward(*args, **options) if phase == "forward" else op.backward(*args)
        if op is node and phase == "backward":
            seen.append((args, op.saved_tensors, op.kept, result))
        return result

    with mt.autograd.op_hook(hook):
        out.backward(mt.ones(*out.shape, dtype=out.dtype, device=device))
    (g_out, saved, kept, returned), = seen
    returned = [r for r in returned if r is not None]
    assert returned
    xp = backend.xp_of(returned[0])
    for i, r in enumerate(returned):
        others = [*g_out, *(a for a in (*saved, *kept) if backend.is_array(a)), *returned[:i], *returned[i + 1:]]
        assert not any(xp.shares_memory(r, other) for other in others), (op_class.__name__, i)
