"""The autograd engine: graph walk, accumulation, shared subgraphs, no_grad, detach, retain_graph, memory release."""
import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn, optim
from minitorch.core import FREED, Function, unbroadcast


def f64(values, requires_grad=True):
    return mt.tensor(values, dtype=np.float64, requires_grad=requires_grad)


# ----- the walk -----
def test_a_chain_of_20000_ops_backpropagates_without_recursion():
    assert sys.getrecursionlimit() < 20_000  # a recursive walk would overflow
    x = f64(0.5)
    y = x
    for _ in range(10_000):
        y = (y * 1.0001) + 0.001  # two ops per step
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 10_000, rel=1e-9)


def test_gradients_accumulate_until_zeroed():
    x = f64([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 3.0)
    x.zero_grad()
    assert x.grad is None
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_diamond_graph():
    """x -> a, b (both from x) -> c = a*b + a: the two paths' gradients add up at x and at a."""
    x = f64([0.3, -1.2])
    a = x.exp()
    b = x * x
    c = (a * b + a).sum()
    c.backward()
    xv = np.array([0.3, -1.2])
    # dc/dx = e^x * x^2 + e^x * 2x + e^x
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xv) * (xv ** 2 + 2 * xv + 1), rtol=1e-12)


def test_a_value_reused_many_times():
    x = f64([2.0, -1.0])
    total = x
    for k in range(1, 200):
        total = total + x * float(k)
    (total * x).sum().backward()
    # total = x (1 + sum k) = 19901 x, loss = 19901 x^2
    np.testing.assert_allclose(x.grad.numpy(), 2 * 19901 * np.array([2.0, -1.0]), rtol=1e-12)


def test_same_tensor_on_both_sides_and_in_a_long_fanout():
    x = f64(3.0)
    (x * x * x).backward()
    assert x.grad.item() == pytest.approx(27.0)
    y = f64([1.0, 2.0])
    mt.stack([y] * 50).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [50.0, 50.0])


def test_leaf_gradients_do_not_alias_each_other():
    """Add hands the same array to both inputs; each leaf must own its .grad."""
    x, y = f64([1.0, 2.0]), f64([3.0, 4.0])
    (x + y).sum().backward()
    x.grad.data += 100
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


def test_gradient_dtype_follows_the_leaf():
    x = mt.tensor([1.0, 2.0], requires_grad=True)  # float32
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


# ----- backward(grad) and its errors -----
def test_backward_with_an_explicit_gradient():
    x = f64([[1.0, 2.0], [3.0, 4.0]])
    y = x * x
    y.backward(mt.tensor([[1.0, 0.0], [0.5, -1.0]], dtype=np.float64))
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() * np.array([[1.0, 0.0], [0.5, -1.0]]))
    z = f64([1.0, 2.0])
    (z * 3).backward(np.array([1.0, 2.0]))  # a plain array works too
    np.testing.assert_allclose(z.grad.numpy(), [3.0, 6.0])


def test_backward_of_a_non_scalar_without_gradient_is_a_clear_error():
    y = f64([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match=r"scalar.*\(2,\).*backward\(grad\)"):
        y.backward()


def test_backward_with_a_wrongly_shaped_gradient_is_a_clear_error():
    y = f64([1.0, 2.0]) * 2
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        y.backward(np.ones(3))


def test_backward_on_a_tensor_without_grad_is_a_clear_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        (f64([1.0], requires_grad=False) * 2).sum().backward()


def test_requires_grad_propagates_and_only_floats_can_require_it():
    a, b = f64([1.0]), f64([1.0], requires_grad=False)
    assert (a * b).requires_grad and not (b * b).requires_grad
    assert (a * b)._op is not None and (b * b)._op is None
    with pytest.raises(TypeError, match="floating-point"):
        mt.tensor([1, 2], requires_grad=True)


def test_non_leaf_gradients_kept_only_on_request():
    x = f64([1.0, 2.0])
    h = x * 3
    h2 = (x * 4).retain_grad()
    (h * h2).sum().backward()
    assert h.grad is None
    np.testing.assert_allclose(h2.grad.numpy(), h.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 24 * x.numpy())


# ----- no_grad / detach -----
def test_no_grad_records_nothing_and_restores_the_mode():
    x = f64([1.0, 2.0])
    with mt.no_grad():
        assert not mt.is_grad_enabled()
        y = (x * 2).exp()
        with mt.enable_grad():
            z = x * 2
        with mt.no_grad():
            pass
        assert not mt.is_grad_enabled()
    assert mt.is_grad_enabled()
    assert not y.requires_grad and y._op is None
    assert z.requires_grad
    with pytest.raises(ZeroDivisionError):
        with mt.no_grad():
            1 / 0
    assert mt.is_grad_enabled()


def test_detach_shares_data_and_cuts_the_graph():
    x = f64([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.data, x.data)
    (d * x).sum().backward()  # only the path through x counts
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0])


# ----- retain_graph and the release of saved arrays -----
def test_second_backward_needs_retain_graph():
    x = f64([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = f64([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * x.numpy())


def test_saved_arrays_are_released_after_backward():
    """h keeps its op (its graph node, as PyTorch's grad_fn), but backward released what the op saved and the graph
    above it; an op nothing holds is freed."""
    x = f64(np.ones((4, 4)))
    h = x.exp()
    product = weakref.ref((h * 2)._op)
    gc.collect()
    assert product() is None
    op = h._op
    scaled = h * 2
    middle = weakref.ref(scaled._op)
    scaled.sum().backward()
    del scaled
    gc.collect()
    assert middle() is None
    assert op.saved_tensors is FREED and op.parents == ()


def test_saved_arrays_are_kept_with_retain_graph():
    x = f64(np.ones((4, 4)))
    h = x.exp()
    op = weakref.ref(h._op)
    (h * 2).sum().backward(retain_graph=True)
    gc.collect()
    assert op() is not None


def test_memory_does_not_grow_over_1000_training_steps():
    """A small MLP trained for 1,000 steps. Every Function of a step but the loss's own is freed by backward (while
    the loss is still alive), and the traced memory after step 1,000 is what it was after step 100, within
    allocator-cache noise."""
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x, target = mt.tensor(rng.standard_normal((16, 8))), mt.tensor(rng.standard_normal((16, 4)))
    functions = []
    original_apply = Function.apply.__func__

    def tracking_apply(cls, *args, **kwargs):
        out = original_apply(cls, *args, **kwargs)
        if out._op is not None:
            functions.append(weakref.ref(out._op))
        return out

    Function.apply = classmethod(tracking_apply)
    try:
        loss = ((model(x) - target) ** 2).mean()
    finally:
        Function.apply = classmethod(original_apply)
    loss.backward()
    # the loss keeps its own op (its graph node, as PyTorch's grad_fn), released; every other Function is freed
    assert len(functions) >= 6 and all(ref() is None for ref in functions[:-1])
    assert functions[-1]() is loss._op and loss._op.saved_tensors is FREED and loss._op.parents == ()

    def step():
        loss = ((model(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    tracemalloc.start()
    try:
        for _ in range(100):
            first_loss = step()
        gc.collect()
        after_100 = tracemalloc.get_traced_memory()[0]
        for _ in range(900):
            last_loss = step()
        gc.collect()
        after_1000 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    print(f"\ntraced memory after step 100: {after_100} B, after step 1000: {after_1000} B")
    assert last_loss < first_loss  # it did train
    # NumPy's shape cache and Python's float free list settle at a few KB; a leak of even one 40-byte object per
    # step would add 36 KB here, and one step's graph holds several KB of arrays.
    assert after_1000 - after_100 < 32 * 1024


# ----- unbroadcast -----
@pytest.mark.parametrize("grad_shape, shape", [((2, 3, 4), (3, 4)), ((2, 3, 4), (3, 1)), ((2, 3, 4), ()),
                                               ((2, 3, 4), (1, 1, 4)), ((3, 4), (3, 4)), ((5,), (1,))])
def test_unbroadcast_sums_over_broadcast_axes(grad_shape, shape):
    g = np.arange(np.prod(grad_shape), dtype=np.float64).reshape(grad_shape)
    out = unbroadcast(g, shape)
    assert out.shape == shape
    # the defining property: for any v of `shape`, <g, broadcast(v)> == <unbroadcast(g), v>
    v = np.random.default_rng(0).standard_normal(shape)
    assert np.sum(g * np.broadcast_to(v, grad_shape)) == pytest.approx(np.sum(out * v))


# ----- user-defined Functions -----
class Square(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, g):
        a, = self.saved_tensors
        return 2 * a * g


def test_a_user_defined_function_joins_the_graph():
    x = f64([1.5, -2.0])
    y = Square.apply(x * 2)
    assert y.requires_grad and isinstance(y._op, Square)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * x.numpy())


def test_needs_input_grad_tells_backward_what_to_compute():
    seen = {}

    class Probe(Function):
        def forward(self, a, b):
            return a + b

        def backward(self, g):
            seen["needs"] = self.needs_input_grad
            return g, g

    Probe.apply(f64([1.0]), f64([2.0], requires_grad=False)).sum().backward()
    assert seen["needs"] == (True, False)


def test_a_first_gradient_is_kept_without_a_copy_only_where_nothing_else_sees_its_memory():
    """The walk keeps a leaf's first gradient as it is (PyTorch's AccumulateGrad steals it) when the backward that
    returned it made its memory (backward._owned: an array of its own, not a view, that nothing else the walk holds
    is); else it copies: two leaves never share a gradient's memory."""
    a, b = (mt.tensor([1.0, 2.0, 3.0], requires_grad=True) for _ in range(2))
    (a + b).sum().backward()                   # Add hands one array to both
    c, d = (mt.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
    (mt.cat([c, d]) * mt.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()   # cat hands each a view of one array
    for x, y in ((a, b), (c, d)):
        assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    a.grad.data[0], c.grad.data[0] = 99.0, 99.0
    assert b.grad.numpy()[0] == 1.0 and d.grad.numpy().tolist() == [3.0, 4.0]
    x = mt.tensor(np.ones((2, 3)), requires_grad=True)
    (x.reshape(6) * mt.tensor(np.arange(6.0))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(2, 3))   # (a view of the gradient Reshape
    made = []

    class Made(mt.Function):   # returns an array of its own, and a view of another one it made

        def forward(self, u, v):
            return u + v

        def backward(self, g):
            made[:] = [g * 2.0, (g * 3.0).reshape(-1)]
            return made[0], made[1]

    u, v = (mt.tensor(np.ones(4), requires_grad=True) for _ in range(2))
    Made.apply(u, v).sum().backward()
    assert u.grad.data is made[0]              # memory of its own that nothing else the walk holds: kept as it is
    assert not np.shares_memory(v.grad.numpy(), made[1])   # a view: copied (its base may be held elsewhere)
    w, b = (mt.tensor(np.ones(4), requires_grad=True) for _ in range(2))             # received: copied)
    mt.nn.functional.layer_norm(mt.tensor(np.arange(12.0).reshape(3, 4)), (4,), w, b).pow(2).sum().backward()
    assert not np.shares_memory(w.grad.numpy(), b.grad.numpy())
    z, g = mt.tensor(np.ones(6), requires_grad=True), np.ones((2, 3))
    z.reshape(2, 3).backward(g)                 # a view of g, which the caller holds: copied
    assert not np.shares_memory(z.grad.numpy(), g)


def test_a_kept_gradient_can_be_accumulated_into_zeroed_and_clipped():
    """A mean's gradient is a broadcast (a read-only view with zero strides): it is copied, not kept, so that a
    second backward adds into it and zero_() and clipping write into it, as in PyTorch."""
    x = mt.tensor(np.arange(6.0).reshape(2, 3), dtype=mt.float64, requires_grad=True)
    x.mean().backward()
    x.mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 2 / 6))
    nn.utils.clip_grad_norm_([x], 0.01)
    assert np.linalg.norm(x.grad.numpy()) <= 0.0101
    x.grad.zero_()
    assert not x.grad.numpy().any()


def test_a_gradient_the_input_shape_does_not_broadcast_to_is_refused_not_reshaped():
    """A backward that returns db transposed ((2, 4) for b (4, 2)) is refused with PyTorch's message; a gradient of
    the broadcast shape is summed back as before."""
    class TransposedDb(mt.Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)
            return a @ b

        def backward(self, g):
            a, b = self.saved_tensors
            return g @ b.T, g.T @ a   # db should be a.T @ g

    a = mt.ones(3, 4, requires_grad=True)
    b = mt.ones(4, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function TransposedDb\.backward returned an invalid gradient - got "
                                           r"\[2, 4\] but expected shape compatible with \[4, 2\]"):
        TransposedDb.apply(a, b).sum().backward()
    x = mt.ones(2, 3, requires_grad=True)
    bias = mt.ones(3, requires_grad=True)
    (x + bias).sum().backward()
    assert bias.grad.numpy().tolist() == [2.0, 2.0, 2.0]
