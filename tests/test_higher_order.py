"""Second derivatives: create_graph=True and mt.grad, checked against finite differences for every primitive op.

For each op f and random weights w on its output, the gradient of L(x) = sum(w * f(x)) is a function of x and w,
vjp(x, w) = J(x)^T w. Recorded with create_graph=True it can be differentiated again, and both of its derivatives
are checked, in float64, against finite differences computed here from a NumPy reference of f (the engine plays no
part in them):
  - along x, the Hessian-vector product H v = d/dx <vjp, v>: central differences of the first derivative along v,
    the first derivative itself by central differences of L;
  - along w, d/dw <vjp, v> = J v: central differences of f along v.
mt.gradgradcheck is then checked to agree, and to catch a backward whose first derivative is right but second wrong.
"""
import math
from collections import namedtuple

import numpy as np
import pytest
from conftest import arrays, away_from_zero, broadcast_shapes, distinct, floats, requires_gpu, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt
import minitorch.functional as F
from minitorch import nn, ops
from minitorch.fused import composed

EPS = 1e-3              # the finite-difference step (and EPS / 2: see numerical_second_order)
RTOL, ATOL = 1e-4, 1e-6


def small_shapes(min_dims=0):
    """Up to 9 elements: the nested differences below cost 4 evaluations of f per element."""
    return shapes(min_dims=min_dims, max_dims=2, max_side=3)


def numerical_grad(loss, xs, eps=EPS):
    """Central differences of loss(*xs) with respect to every element of every array in xs (nudged in place)."""
    grads = []
    for x in xs:
        g = np.zeros(x.shape)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            original = flat[j]
            flat[j] = original + eps
            up = loss(*xs)
            flat[j] = original - eps
            down = loss(*xs)
            flat[j] = original
            gflat[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def numerical_second_order(f_np, inputs, w, v, eps=EPS):
    """(H v for each input, J v) of L(x) = sum(w * f_np(x)) by central differences of its numerical gradient.

    Each difference has a truncation error c h^2 + O(h^4) for its step h (the inner step of the gradient and the outer
    one along v are the same h), which is not small where f's higher derivatives are large (x ** -1 near 0.5: its
    fourth derivative is about 800). So both are computed at h = eps and eps / 2 and extrapolated (Richardson):
    (4 D(eps / 2) - D(eps)) / 3 cancels the h^2 terms, leaving O(eps^4) and the rounding noise (about 1e-16 / eps^2).
    """
    def loss(*xs):
        return float(np.sum(w * f_np(*xs)))

    def moved(sign, h):
        return [np.array(x + sign * h * d, dtype=np.float64) for x, d in zip(inputs, v)]

    def differences(h):
        up, down = numerical_grad(loss, moved(+1, h), h), numerical_grad(loss, moved(-1, h), h)
        hv = [(a - b) / (2 * h) for a, b in zip(up, down)]
        jv = (np.asarray(f_np(*moved(+1, h))) - np.asarray(f_np(*moved(-1, h)))) / (2 * h)
        return hv, jv

    (hv, jv), (hv_half, jv_half) = differences(eps), differences(eps / 2)
    return [(4 * b - a) / 3 for a, b in zip(hv, hv_half)], (4 * jv_half - jv) / 3


def analytic_second_order(f_mt, inputs, w, v):
    """(H v for each input, J v) from the engine: mt.grad with create_graph=True, then a second mt.grad."""
    xs = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    wt = mt.tensor(w, dtype=np.float64, requires_grad=True)
    out = f_mt(*xs)
    assert out.shape == np.shape(w)
    grads = mt.grad(out, xs, wt, create_graph=True, allow_unused=True)
    assert all(g is None or g.requires_grad for g in grads)  # recorded: a function of w at least
    s = sum((g * mt.tensor(d, dtype=np.float64)).sum() for g, d in zip(grads, v) if g is not None)
    second = mt.grad(s, xs + [wt], allow_unused=True)
    as_array = [np.zeros(t.shape) if g is None else g.numpy() for g, t in zip(second, xs + [wt])]
    return as_array[:-1], as_array[-1]


def check_second_order(f_mt, f_np, inputs, seed=0):
    rng = np.random.default_rng(seed)
    out_shape = np.shape(f_np(*[a.copy() for a in inputs]))
    w = rng.standard_normal(out_shape)
    v = [rng.standard_normal(np.shape(a)) for a in inputs]
    hv, jv = analytic_second_order(f_mt, inputs, w, v)
    hv_num, jv_num = numerical_second_order(f_np, inputs, w, v)
    for i, (a, n) in enumerate(zip(hv, hv_num)):
        np.testing.assert_allclose(a, n, rtol=RTOL, atol=ATOL, err_msg=f"Hessian-vector product, input {i}")
    np.testing.assert_allclose(jv, jv_num, rtol=RTOL, atol=ATOL, err_msg="d/dw of the gradient (J v)")


# ----- the ops: a strategy of (inputs, options), the op on Tensors, a NumPy reference, the Function it checks -----
Op = namedtuple("Op", "cases f_mt f_np function")
OPS = {}


def unary(values=arrays):
    return small_shapes().flatmap(values).map(lambda x: ((x,), {}))


@st.composite
def broadcast_pair(draw, left=arrays, right=arrays):
    shape_a, shape_b = draw(broadcast_shapes(max_dims=2, max_side=3))
    return (draw(left(shape_a)), draw(right(shape_b))), {}


def positive(shape):
    return arrays(shape, 0.5, 3.0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


OPS["add"] = Op(broadcast_pair(), lambda a, b: a + b, np.add, ops.Add)
OPS["sub"] = Op(broadcast_pair(), lambda a, b: a - b, np.subtract, ops.Sub)
OPS["mul"] = Op(broadcast_pair(), lambda a, b: a * b, np.multiply, ops.Mul)
OPS["mul (same tensor twice)"] = Op(unary(), lambda a: a * a, np.square, ops.Mul)
OPS["div"] = Op(broadcast_pair(right=lambda s: away_from_zero(s, gap=0.5)), lambda a, b: a / b, np.divide, ops.Div)
OPS["pow"] = Op(broadcast_pair(left=positive, right=lambda s: arrays(s, -2.0, 2.0)), lambda a, b: a ** b, np.power,
                ops.Pow)
OPS["tensor ** number"] = Op(unary(positive).map(lambda c: c), lambda a: a ** 2.5, lambda a: a ** 2.5, ops.Pow)
OPS["number ** tensor"] = Op(unary(), lambda a: 1.7 ** a, lambda a: 1.7 ** a, ops.Pow)
OPS["neg"] = Op(unary(), lambda a: -a, np.negative, ops.Neg)
OPS["exp"] = Op(unary(lambda s: arrays(s, -2.0, 2.0)), lambda a: a.exp(), np.exp, ops.Exp)
OPS["log"] = Op(unary(positive), lambda a: a.log(), np.log, ops.Log)
OPS["sqrt"] = Op(unary(positive), lambda a: a.sqrt(), np.sqrt, ops.Sqrt)
OPS["tanh"] = Op(unary(), lambda a: a.tanh(), np.tanh, ops.Tanh)
OPS["sigmoid"] = Op(unary(), lambda a: a.sigmoid(), _sigmoid, ops.Sigmoid)
OPS["relu"] = Op(unary(away_from_zero), lambda a: a.relu(), lambda a: np.maximum(a, 0.0), ops.Relu)
OPS["bias_relu"] = Op(broadcast_pair(left=lambda s: arrays(s, -3.0, 3.0), right=lambda s: arrays(s, -3.0, 3.0)).filter(
    lambda c: np.abs(c[0][0] + c[0][1]).min() > 0.1), F.bias_relu, lambda a, b: np.maximum(a + b, 0.0), ops.BiasRelu)
OPS["gelu"] = Op(unary(), lambda a: a.gelu(), _gelu, ops.Gelu)
OPS["erf"] = Op(unary(), lambda a: ops.Erf.apply(a), np.vectorize(math.erf), ops.Erf)
OPS["abs"] = Op(unary(away_from_zero), lambda a: a.abs(), np.abs, ops.Abs)
OPS["cast"] = Op(unary(), lambda a: ops.Cast.apply(a, dtype=np.float64) * a, lambda a: a * a, ops.Cast)


@st.composite
def matmul_cases(draw):
    k, m, n = (draw(st.integers(1, 3)) for _ in range(3))
    kind = draw(st.sampled_from(["vector @ vector", "vector @ matrix", "matrix @ vector", "matrix @ matrix",
                                 "batch @ matrix"]))
    batch_a, batch_b = draw(broadcast_shapes(max_dims=1, max_side=2))
    shape_a = (k,) if kind.startswith("vector") else (2, m, k) if kind.startswith("batch") else batch_a + (m, k)
    shape_b = (k,) if kind.endswith("vector") else (k, n) if kind.startswith("batch") else batch_b + (k, n)
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {}


OPS["matmul"] = Op(matmul_cases(), lambda a, b: a @ b, np.matmul, ops.MatMul)
OPS["matmul (a @ a.T)"] = Op(small_shapes(min_dims=2).flatmap(arrays).map(lambda x: ((x,), {})),
                             lambda a: a @ a.T, lambda a: a @ a.T, ops.MatMul)


@st.composite
def reduce_cases(draw, values=arrays):
    shape = draw(small_shapes(min_dims=1))
    dim = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    return (draw(values(shape)),), {"dim": dim, "keepdim": draw(st.booleans())}


# a reduction alone is linear (its Hessian is 0); times its input, its backward is differentiated along a nonzero path
OPS["sum"] = Op(reduce_cases(), lambda x, dim, keepdim: x.sum(dim=dim, keepdim=keepdim) ** 2,
                lambda x, dim, keepdim: np.sum(x, axis=dim, keepdims=keepdim) ** 2, ops.Sum)
OPS["mean"] = Op(reduce_cases(), lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim) ** 2,
                 lambda x, dim, keepdim: np.mean(x, axis=dim, keepdims=keepdim) ** 2, ops.Mean)
OPS["max"] = Op(reduce_cases(values=distinct), lambda x, dim, keepdim: x.max(dim=dim, keepdim=keepdim) ** 2,
                lambda x, dim, keepdim: np.max(x, axis=dim, keepdims=keepdim) ** 2, ops.Max)


@st.composite
def reshape_cases(draw):
    shape = draw(small_shapes())
    size = int(np.prod(shape, dtype=np.int64))
    return (draw(arrays(shape)),), {"shape": draw(st.sampled_from([(size,), shape[::-1], (1, size)]))}


OPS["reshape"] = Op(reshape_cases(), lambda x, shape: x.reshape(shape).tanh(),
                    lambda x, shape: np.tanh(np.reshape(x, shape)), ops.Reshape)


@st.composite
def permute_cases(draw):
    shape = draw(small_shapes())
    return (draw(arrays(shape)),), {"dims": tuple(draw(st.permutations(range(len(shape)))))}


OPS["permute"] = Op(permute_cases(), lambda x, dims: x.permute(dims).tanh(),
                    lambda x, dims: np.tanh(np.transpose(x, dims)), ops.Permute)


@st.composite
def getitem_cases(draw):
    shape = draw(small_shapes(min_dims=1))
    n = shape[0]
    index = draw(st.one_of(st.integers(-n, n - 1), st.just(slice(None, None, -1)),
                           hnp.arrays(np.int64, (3,), elements=st.integers(0, n - 1))))  # repeats add up
    return (draw(arrays(shape)),), {"index": index}


OPS["getitem"] = Op(getitem_cases(), lambda x, index: x[index] * x[index],
                    lambda x, index: x[index] * x[index], ops.GetItem)


@st.composite
def index_add_cases(draw):
    n, d = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    ids = draw(hnp.arrays(np.int64, (3,), elements=st.integers(0, n - 1)))
    return (draw(arrays((3, d))),), {"ids": ids, "n": n}


def np_index_add(g, ids, n):
    out = np.zeros((n,) + g.shape[1:])
    np.add.at(out, ids, g)
    return out


OPS["index_add (getitem's backward)"] = Op(
    index_add_cases(), lambda g, ids, n: ops.IndexAdd.apply(g, index=ids, shape=(n,) + g.shape[1:], advanced=True) ** 2,
    lambda g, ids, n: np_index_add(g, ids, n) ** 2, ops.IndexAdd)


@st.composite
def embedding_cases(draw):
    n, d = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    ids = draw(hnp.arrays(np.int64, draw(st.sampled_from([(3,), (2, 2)])), elements=st.integers(0, n - 1)))
    return (draw(arrays((n, d))),), {"ids": ids}


OPS["embedding"] = Op(embedding_cases(), lambda w, ids: ops.Embedding.apply(ids, w) ** 2, lambda w, ids: w[ids] ** 2,
                      ops.Embedding)


def test_the_embeddings_padding_row_gets_no_gradient_of_any_order():
    w = mt.tensor((np.arange(8.0).reshape(4, 2) + 1) / 4, dtype=np.float64, requires_grad=True)
    ids = np.array([[0, 2], [2, 1]])
    out = (F.embedding(ids, w, padding_idx=2) ** 3).sum()
    (g,) = mt.grad(out, [w], create_graph=True)
    (h,) = mt.grad((g * g).sum(), [w])
    expected_g = np.zeros((4, 2))
    np.add.at(expected_g, ids.reshape(-1), 3 * w.numpy()[ids.reshape(-1)] ** 2)
    expected_g[2] = 0                                     # the padding row is a constant
    np.testing.assert_allclose(g.numpy(), expected_g)
    assert np.all(h.numpy()[2] == 0) and np.all(h.numpy()[[0, 1]] != 0)


@st.composite
def expand_cases(draw):
    shape, target = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=2, max_side=3)
                         .map(lambda b: (b.input_shapes[0], b.result_shape)))
    return (draw(arrays(shape)),), {"target": target}


OPS["expand (sum's backward)"] = Op(expand_cases(), lambda x, target: ops.Expand.apply(x, shape=target) ** 2,
                                    lambda x, target: np.broadcast_to(x, target) ** 2, ops.Expand)


@st.composite
def masked_fill_cases(draw):
    shape = draw(small_shapes())
    return (draw(arrays(shape)),), {"mask": draw(hnp.arrays(np.bool_, shape)), "value": draw(floats())}


OPS["masked_fill"] = Op(masked_fill_cases(), lambda x, mask, value: x.masked_fill(mt.tensor(mask), value) ** 2,
                        lambda x, mask, value: np.where(mask, value, x) ** 2, ops.MaskedFill)


@st.composite
def where_cases(draw):
    shape_c, shape_a, shape_b = draw(broadcast_shapes(num_shapes=3, max_dims=2, max_side=3))
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {"cond": draw(hnp.arrays(np.bool_, shape_c))}


OPS["where"] = Op(where_cases(), lambda a, b, cond: mt.where(mt.tensor(cond), a, b) * a,
                  lambda a, b, cond: np.where(cond, a, b) * a, ops.Where)


@st.composite
def dropout_cases(draw):
    x = draw(small_shapes().flatmap(arrays))
    seed, p = draw(st.integers(0, 2 ** 16)), draw(floats(0.2, 0.6))
    mt.manual_seed(seed)
    keep = F.dropout(mt.ones(*x.shape, dtype=np.float64), p).numpy() != 0  # the mask that this seed draws
    return (x,), {"seed": seed, "p": p, "keep": keep}


OPS["dropout"] = Op(dropout_cases(),
                    lambda x, seed, p, keep: (mt.manual_seed(seed), F.dropout(x, p))[1] ** 2,
                    lambda x, seed, p, keep: (x * keep / (1.0 - p)) ** 2, ops.Dropout)


@st.composite
def dropout_add_cases(draw):
    (x,), options = draw(dropout_cases())
    return (x, draw(arrays(x.shape))), options


OPS["dropout_add"] = Op(dropout_add_cases(),
                        lambda x, y, seed, p, keep: (mt.manual_seed(seed), F.dropout_add(x, y, p))[1] ** 2,
                        lambda x, y, seed, p, keep: (x + y * keep / (1.0 - p)) ** 2, ops.DropoutAdd)


@st.composite
def cat_cases(draw):
    shape = draw(small_shapes(min_dims=1))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    parts = [shape[:dim % len(shape)] + (k,) + shape[dim % len(shape) + 1:] for k in draw(
        st.lists(st.integers(1, 2), min_size=1, max_size=3))]
    return tuple(draw(arrays(s)) for s in parts), {"dim": dim}


OPS["cat"] = Op(cat_cases(), lambda *xs, dim: mt.cat(list(xs), dim=dim) ** 2,
                lambda *xs, dim: np.concatenate(xs, axis=dim) ** 2, ops.Cat)


@st.composite
def stack_cases(draw):
    shape = draw(small_shapes())
    xs = tuple(draw(arrays(shape)) for _ in range(draw(st.integers(1, 3))))
    return xs, {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


OPS["stack"] = Op(stack_cases(), lambda *xs, dim: mt.stack(list(xs), dim=dim) ** 2,
                  lambda *xs, dim: np.stack(xs, axis=dim) ** 2, ops.Stack)


# ----- the tests -----
@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=15)
@given(data=st.data())
def test_second_derivatives_match_finite_differences_of_the_first(name, data):
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    check_second_order(lambda *xs: op.f_mt(*xs, **options), lambda *xs: op.f_np(*xs, **options), inputs)


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=4)
@given(data=st.data())
def test_gradgradcheck_agrees(name, data):
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    assert mt.gradgradcheck(lambda *xs: op.f_mt(*xs, **options), leaves, atol=1e-6, rtol=1e-5)


def _functions(module):
    return {v for v in vars(module).values() if isinstance(v, type) and issubclass(v, mt.Function)
            and v is not mt.Function}


def test_every_primitive_op_has_a_second_order_check():
    """Each Function in minitorch.ops is checked above (ToDevice, which needs a GPU, by the test after this one)."""
    checked = {op.function for op in OPS.values()} | {ops.ToDevice}
    missing = _functions(ops) - checked
    assert not missing, f"no second-order check for {sorted(f.__name__ for f in missing)}"
    print(f"\n{len(_functions(ops))} primitive ops with second-order checks ({len(OPS)} forms)")


@requires_gpu
@pytest.mark.gpu
def test_to_device_is_differentiated_twice():
    x = mt.tensor([0.5, -1.0, 2.0], dtype=np.float64, requires_grad=True)
    y = (x.to("cuda") ** 3).sum()
    g, = mt.grad(y, x, create_graph=True)
    h, = mt.grad(g.sum(), x)
    assert g.device == h.device == "cpu"
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy(), rtol=1e-12)


# ----- the engine's rules -----
def f64(values, requires_grad=True):
    return mt.tensor(values, dtype=np.float64, requires_grad=requires_grad)


def test_backward_with_create_graph_leaves_a_differentiable_grad():
    x = f64([0.5, -1.5, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    assert first.requires_grad and not first.is_leaf
    np.testing.assert_allclose(first.numpy(), 3 * x.numpy() ** 2)
    x.grad = None
    first.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.numpy())


def test_third_derivative_by_nesting():
    x = f64([0.7, -1.1])
    g1, = mt.grad((x ** 4).sum(), x, create_graph=True)
    g2, = mt.grad(g1.sum(), x, create_graph=True)
    g3, = mt.grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), 24 * x.numpy(), rtol=1e-12)


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x, y = f64([1.0, 2.0]), f64([3.0, -1.0])
    z = (x * y).sum()
    gx, gy = mt.grad(z, [x, y], retain_graph=True)
    np.testing.assert_array_equal(gx.numpy(), [3.0, -1.0])
    np.testing.assert_array_equal(gy.numpy(), [1.0, 2.0])
    assert x.grad is None and y.grad is None
    assert not gx.requires_grad
    gx2, = mt.grad(z * 2, [x])  # retain_graph=True kept the graph for this second pass
    np.testing.assert_array_equal(gx2.numpy(), [6.0, -2.0])
    with pytest.raises(RuntimeError, match="second time"):
        mt.grad(z, [x])


def test_grad_with_respect_to_an_intermediate_tensor_and_with_grad_outputs():
    x = f64([1.0, 2.0, 3.0])
    h = x * x
    out = h.exp()
    g, = mt.grad(out, h, grad_outputs=mt.tensor([1.0, 0.0, 2.0], dtype=np.float64))
    np.testing.assert_allclose(g.numpy(), np.exp(x.numpy() ** 2) * [1.0, 0.0, 2.0])


def test_grad_of_two_outputs_adds_their_gradients():
    x = f64([1.0, -2.0])
    g, = mt.grad([(x * x).sum(), (3 * x).sum()], x)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() + 3)


def test_grad_errors_name_the_argument():
    x, unused = f64([1.0]), f64([2.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match=r"inputs\[1\].*allow_unused=True"):
        mt.grad(y, [x, unused], retain_graph=True)
    gx, gu = mt.grad(y, [x, unused], allow_unused=True, retain_graph=True)
    assert gu is None and gx.item() == 2.0
    with pytest.raises(RuntimeError, match=r"inputs\[0\] is not a Tensor that requires grad"):
        mt.grad(y, [f64([1.0], requires_grad=False)], retain_graph=True)
    with pytest.raises(ValueError, match="2 outputs but 1 grad_outputs"):
        mt.grad([y, y], [x], [None], retain_graph=True)
    pair = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"outputs\[0\].*scalar.*\(2,\).*grad_outputs"):
        mt.grad(pair * 2, [pair])
    with pytest.raises(ValueError, match=r"outputs\[0\].*\(3,\).*\(2,\)"):
        mt.grad(pair * 2, [pair], np.ones(3))


def test_a_gradient_that_does_not_depend_on_x_is_unused_for_the_second_derivative():
    x = f64([1.0, 2.0])
    g, = mt.grad((3 * x).sum(), x, create_graph=True)
    assert not g.requires_grad  # 3, a constant: nothing to differentiate (as in PyTorch)
    w = f64([1.0, 1.0])
    g, = mt.grad((3 * x * w).sum(), x, create_graph=True)
    h = mt.grad(g.sum(), [x, w], allow_unused=True)
    assert h[0] is None
    np.testing.assert_array_equal(h[1].numpy(), [3.0, 3.0])


def test_without_create_graph_backward_passes_see_arrays_and_with_it_tensors():
    seen = []

    class Square(mt.Function):
        def forward(self, a):
            self.save_for_backward(a)
            return a * a

        def backward(self, g):
            seen.append(type(g))
            a, = self.saved_tensors
            return 2 * g * a

    x = f64([1.5])
    Square.apply(x).sum().backward()
    Square.apply(x).sum().backward(create_graph=True)
    assert seen == [np.ndarray, mt.Tensor]
    assert x.grad.requires_grad  # 3 (fast path) + 3 (recorded): the sum is recorded
    np.testing.assert_allclose(x.grad.numpy(), [6.0])


def test_an_op_that_saves_a_derived_array_gets_a_clear_error():
    class CubeSavingSquare(mt.Function):
        def forward(self, a):
            square = a * a  # derived from the input: treating it as a constant would be silently wrong
            self.save_for_backward(square)
            return square * a

        def backward(self, g):
            square, = self.saved_tensors
            return 3 * g * square

    x = f64([1.0, 2.0])
    CubeSavingSquare.apply(x).sum().backward()  # the fast path is fine
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    with pytest.raises(RuntimeError, match=r"CubeSavingSquare.*value 0 is a float array computed from its inputs"):
        CubeSavingSquare.apply(x).sum().backward(create_graph=True)


class _CumSum(mt.Function):
    """A user's op whose backward calls an array function on g: it works on arrays only."""

    def forward(self, a):
        return a.cumsum()

    def backward(self, g):
        return g[::-1].cumsum()[::-1]


def test_an_op_whose_backward_works_on_arrays_only_gets_a_clear_error():
    w = f64(np.arange(3.0))
    y = (_CumSum.apply(w) ** 2).sum()
    with pytest.raises(RuntimeError, match="_CumSum: create_graph=True"):
        mt.grad(y, w, create_graph=True)


class _SquareWithConstantSecondDerivative(mt.Function):
    """d(a^2) = 2 a da is right, but a is read as a constant, so the second derivative misses 2 g."""

    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, g):
        a, = self.saved_tensors
        a = a.detach() if isinstance(a, mt.Tensor) else a
        return 2 * g * a


def test_gradgradcheck_catches_a_wrong_second_derivative_that_gradcheck_passes():
    x = f64([[0.5, -1.0], [2.0, 0.3]])
    assert mt.gradcheck(_SquareWithConstantSecondDerivative.apply, [x])
    with pytest.raises(mt.GradcheckError, match="input 0"):
        mt.gradgradcheck(_SquareWithConstantSecondDerivative.apply, [x])
    with pytest.raises(AssertionError, match="Hessian-vector product"):
        check_second_order(_SquareWithConstantSecondDerivative.apply, np.square, (x.numpy(),))
    check_second_order(lambda t: t * t, np.square, (x.numpy(),))  # the right op passes the same check


def test_gradgradcheck_checks_the_grad_outputs_too():
    x = f64([0.5, -1.0])
    assert mt.gradgradcheck(lambda a: (a.tanh(), a * a), [x], grad_outputs=[np.ones(2), np.array([1.0, -2.0])])
    with pytest.raises(ValueError, match="2 outputs but 1 grad_outputs"):
        mt.gradgradcheck(lambda a: (a.tanh(), a * a), [x], grad_outputs=[np.ones(2)])


# ----- the fused ops: second order through their composed form (docs/backprop.md section 7) -----
def _fused_cases():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5))
    target = np.array([1, 4, 0])
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = np.array([[True, True, False], [True, False, False], [False, False, False]])  # a fully masked row
    gates, c = rng.standard_normal((2, 12)), rng.standard_normal((2, 3))
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    t = mt.tensor
    return {
        "softmax": ((x,), lambda m, a: m.softmax(a, dim=-1)),
        "log_softmax": ((x,), lambda m, a: m.log_softmax(a, dim=0)),
        "cross_entropy": ((x,), lambda m, a: m.cross_entropy(a, t(target), label_smoothing=0.1)),
        "cross_entropy (ignored row, sum)": ((x,), lambda m, a: m.cross_entropy(a, t([1, -100, 2]), reduction="sum")),
        "cross_entropy (none)": ((x,), lambda m, a: m.cross_entropy(a, t(target), reduction="none")),
        "layer_norm": ((x, w, b), lambda m, a, w, b: m.layer_norm(a, 5, w, b)),
        "layer_norm (no affine)": ((x,), lambda m, a: m.layer_norm(a, 5)),
        "attention": ((q, k, v), lambda m, q, k, v: m.scaled_dot_product_attention(q, k, v)),
        "attention (masked)": ((q, k, v), lambda m, q, k, v: m.scaled_dot_product_attention(q, k, v, t(mask))),
        "attention (dropout)": ((q, k, v), lambda m, q, k, v: (
            mt.manual_seed(5), m.scaled_dot_product_attention(q, k, v, t(mask), dropout_p=0.3))[1]),
        "lstm_cell": ((gates, c), lambda m, g, c: mt.cat(list(m.lstm_cell(g, c)), dim=-1)),
    }


FUSED = _fused_cases()


def _hvp(fn, inputs, seed=0):
    """H v of sum(w * fn(x)) and the recorded first gradient, for fixed random w and v."""
    rng = np.random.default_rng(seed)
    xs = [f64(a) for a in inputs]
    out = fn(*xs)
    w = mt.tensor(rng.standard_normal(out.shape), dtype=np.float64)
    grads = mt.grad((out * w).sum(), xs, create_graph=True)
    v = [mt.tensor(rng.standard_normal(x.shape), dtype=np.float64) for x in xs]
    hvp = mt.grad(sum((g * d).sum() for g, d in zip(grads, v)), xs, allow_unused=True)  # layer_norm: db is linear
    return [g.numpy() for g in grads], [np.zeros(x.shape) if h is None else h.numpy() for h, x in zip(hvp, xs)]


@pytest.mark.parametrize("name", list(FUSED))
def test_fused_op_second_derivatives_equal_the_composed_ops(name):
    inputs, fn = FUSED[name]
    first, hvp = _hvp(lambda *xs: fn(F, *xs), inputs)
    first_c, hvp_c = _hvp(lambda *xs: fn(composed, *xs), inputs)
    for a, b in zip(first + hvp, first_c + hvp_c):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert any(np.abs(h).max() > 1e-3 for h in hvp)  # a second derivative that is there to be compared


@pytest.mark.parametrize("name", [n for n in FUSED if "dropout" not in n])
def test_fused_op_gradgradcheck(name):
    inputs, fn = FUSED[name]
    assert mt.gradgradcheck(lambda *xs: fn(F, *xs), [f64(a) for a in inputs], atol=1e-6, rtol=1e-5)


def test_fused_ops_first_gradient_under_create_graph_equals_the_fast_path():
    for name, (inputs, fn) in FUSED.items():
        xs = [f64(a) for a in inputs]
        first, _ = _hvp(lambda *ts: fn(F, *ts), inputs)
        out = fn(F, *xs)
        w = mt.tensor(np.random.default_rng(0).standard_normal(out.shape), dtype=np.float64)
        (out * w).sum().backward()
        for a, x in zip(first, xs):
            np.testing.assert_allclose(a, x.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


# ----- a small MLP: double backward through the fused ops against the composed graph and finite differences -----
class MLP(nn.Module):
    def __init__(self, ops_module):
        super().__init__()
        self.F = ops_module
        self.fc1, self.fc2 = nn.Linear(4, 6), nn.Linear(6, 3)
        self.norm_w = nn.Parameter(mt.ones(6, dtype=np.float64))
        self.norm_b = nn.Parameter(mt.zeros(6, dtype=np.float64))

    def forward(self, x, target):
        h = self.F.layer_norm(self.fc1(x), 6, self.norm_w, self.norm_b).gelu()
        logits = self.fc2(h)
        return self.F.cross_entropy(logits, target, label_smoothing=0.1) + self.F.softmax(logits, -1).max(-1).mean()


def _mlp_pair():
    mt.manual_seed(0)
    fused = MLP(F)
    for p in fused.parameters():
        p.data = p.data.astype(np.float64)
    composed_model = MLP(composed)
    for p, q in zip(composed_model.parameters(), fused.parameters()):
        p.data = q.data.copy()
    rng = np.random.default_rng(1)
    x = mt.tensor(rng.standard_normal((5, 4)), dtype=np.float64, requires_grad=True)
    return fused, composed_model, x, mt.tensor([0, 2, 1, 1, 0])


def _double_backward(model, x, target, v):
    """H v over the parameters, and the gradient penalty's gradient d |dL/dx|^2 / d params."""
    params = list(model.parameters())
    grads = mt.grad(model(x, target), params, create_graph=True)
    hvp = mt.grad(sum((g * d).sum() for g, d in zip(grads, v)), params, retain_graph=True)
    gx, = mt.grad(model(x, target), x, create_graph=True)
    penalty = mt.grad((gx * gx).sum(), params)
    return [h.numpy() for h in hvp], [p.numpy() for p in penalty]


def test_mlp_double_backward_through_fused_ops_equals_the_composed_graph():
    fused, composed_model, x, target = _mlp_pair()
    rng = np.random.default_rng(2)
    v = [mt.tensor(rng.standard_normal(p.shape), dtype=np.float64) for p in fused.parameters()]
    hvp, penalty = _double_backward(fused, x, target, v)
    hvp_c, penalty_c = _double_backward(composed_model, x, target, v)
    for a, b in zip(hvp + penalty, hvp_c + penalty_c):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_mlp_hessian_vector_product_matches_finite_differences_of_the_gradient():
    fused, _, x, target = _mlp_pair()
    params = list(fused.parameters())
    rng = np.random.default_rng(2)
    v = [rng.standard_normal(p.shape) for p in params]
    hvp, _ = _double_backward(fused, x, target, [mt.tensor(d, dtype=np.float64) for d in v])

    def gradient_at(sign, eps=1e-5):  # the first derivative (fast path) with every parameter moved along v
        originals = [p.data.copy() for p in params]
        for p, d in zip(params, v):
            p.data = p.data + sign * eps * d
        fused.zero_grad()
        fused(x, target).backward()
        grads = [p.grad.numpy().copy() for p in params]
        for p, o in zip(params, originals):
            p.data = o
        return grads

    up, down = gradient_at(+1), gradient_at(-1)
    for h, a, b in zip(hvp, up, down):
        np.testing.assert_allclose(h, (a - b) / 2e-5, rtol=1e-4, atol=1e-6)
