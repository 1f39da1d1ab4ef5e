"""Property-based gradient checks of every differentiable engine op.

For each op, hypothesis draws shapes (0-d tensors, size-1 axes, broadcastable pairs) and float64 values kept away
from the op's non-differentiable points. The test then checks, against a NumPy reference written here:
  - the value of the op,
  - the analytic vector-Jacobian product from backward(w) against central finite differences of
    L(x) = sum(w * f_numpy(x)), computed by the test itself (the code under test plays no part in them),
  - and separately that mt.gradcheck agrees.
"""
from collections import namedtuple

import numpy as np
import pytest
from conftest import arrays, away_from_zero, broadcast_shapes, distinct, floats, shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt
import minitorch.functional as F

EPS = 1e-6              # central-difference step (float64)
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-6
VALUE_RTOL, VALUE_ATOL = 1e-10, 1e-12


def numerical_vjp(f_np, inputs, w, eps=EPS):
    """d/dx_i of L = sum(w * f_np(*x)) for every element of every input, by central differences in float64."""
    xs = [np.array(a, dtype=np.float64, copy=True) for a in inputs]

    def loss():
        return float(np.sum(w * f_np(*xs)))

    grads = []
    for x in xs:
        g = np.zeros(x.shape)
        flat, gflat = x.reshape(-1), g.reshape(-1)  # views: nudging flat nudges x
        for j in range(flat.size):
            original = flat[j]
            flat[j] = original + eps
            up = loss()
            flat[j] = original - eps
            down = loss()
            flat[j] = original
            gflat[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def check_op(f_mt, f_np, inputs):
    """Value against NumPy, then backward(w) against central differences of the NumPy reference."""
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    out = f_mt(*leaves)
    expected = np.asarray(f_np(*[a.copy() for a in inputs]), dtype=np.float64)
    assert out.shape == expected.shape
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=VALUE_RTOL, atol=VALUE_ATOL)

    w = np.random.default_rng(0).standard_normal(expected.shape)
    out.backward(mt.tensor(w, dtype=np.float64))
    for i, (leaf, numeric) in enumerate(zip(leaves, numerical_vjp(f_np, inputs, w))):
        analytic = leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape)
        assert analytic.shape == leaf.shape, f"input {i}: gradient shape {analytic.shape} != {leaf.shape}"
        np.testing.assert_allclose(analytic, numeric, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"input {i}")


# An op under test: `cases` draws (inputs, options); f_mt(*tensors, **options) and f_np(*arrays, **options).
Op = namedtuple("Op", "cases f_mt f_np")
OPS = {}


def case(draw_inputs):
    """A strategy of (inputs, {}) from a strategy of input tuples."""
    return draw_inputs.map(lambda inputs: (tuple(inputs), {}))


@st.composite
def broadcast_pair(draw, left=arrays, right=arrays):
    shape_a, shape_b = draw(broadcast_shapes())
    return (draw(left(shape_a)), draw(right(shape_b))), {}


def unary(values=arrays):
    return shapes().flatmap(lambda s: values(s)).map(lambda x: ((x,), {}))


def positive(shape):
    return arrays(shape, 0.1, 3.0)


# ----- binary operators, with broadcasting -----
OPS["add"] = Op(broadcast_pair(), lambda a, b: a + b, np.add)
OPS["sub"] = Op(broadcast_pair(), lambda a, b: a - b, np.subtract)
OPS["mul"] = Op(broadcast_pair(), lambda a, b: a * b, np.multiply)
OPS["div"] = Op(broadcast_pair(right=lambda s: away_from_zero(s, gap=0.2)), lambda a, b: a / b, np.divide)
OPS["pow"] = Op(broadcast_pair(left=lambda s: arrays(s, 0.2, 2.0), right=lambda s: arrays(s, -2.0, 2.0)),
                lambda a, b: a ** b, np.power)


# ----- the same operators with a Python number on either side -----
@st.composite
def with_number(draw, values=arrays, numbers=floats()):
    x = draw(shapes().flatmap(values))
    return (x,), {"c": draw(numbers)}


nonzero_numbers = floats(-3, 3).filter(lambda c: abs(c) >= 0.2)
OPS["tensor + number"] = Op(with_number(), lambda x, c: x + c, lambda x, c: x + c)
OPS["number + tensor"] = Op(with_number(), lambda x, c: c + x, lambda x, c: c + x)
OPS["tensor - number"] = Op(with_number(), lambda x, c: x - c, lambda x, c: x - c)
OPS["number - tensor"] = Op(with_number(), lambda x, c: c - x, lambda x, c: c - x)
OPS["tensor * number"] = Op(with_number(), lambda x, c: x * c, lambda x, c: x * c)
OPS["number * tensor"] = Op(with_number(), lambda x, c: c * x, lambda x, c: c * x)
OPS["tensor / number"] = Op(with_number(numbers=nonzero_numbers), lambda x, c: x / c, lambda x, c: x / c)
OPS["number / tensor"] = Op(with_number(values=lambda s: away_from_zero(s, 0.2)), lambda x, c: c / x,
                            lambda x, c: c / x)
OPS["tensor ** number"] = Op(with_number(values=lambda s: arrays(s, 0.2, 2.0), numbers=floats(-2.5, 3.0)),
                             lambda x, c: x ** c, lambda x, c: np.power(x, c))
OPS["tensor ** integer (any sign)"] = Op(with_number(numbers=st.sampled_from([1, 2, 3])),
                                         lambda x, c: x ** c, lambda x, c: np.power(x, c))
OPS["number ** tensor"] = Op(with_number(values=lambda s: arrays(s, -2.0, 2.0), numbers=floats(0.2, 3.0)),
                             lambda x, c: c ** x, lambda x, c: np.power(c, x))
OPS["neg"] = Op(unary(), lambda x: -x, np.negative)


# ----- matmul: 1-D and n-D operands, broadcast batch dims -----
@st.composite
def matmul_cases(draw):
    k, m, n = (draw(st.integers(1, 4)) for _ in range(3))
    kind = draw(st.sampled_from(["vector @ vector", "vector @ matrix", "matrix @ vector", "matrix @ matrix"]))
    batch_a, batch_b = draw(broadcast_shapes(max_dims=2, max_side=3))
    shape_a = (k,) if kind.startswith("vector") else batch_a + (m, k)
    shape_b = (k,) if kind.endswith("vector") else batch_b + (k, n)
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {}


OPS["matmul"] = Op(matmul_cases(), lambda a, b: a @ b, np.matmul)


# ----- elementwise functions -----
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


OPS["exp"] = Op(unary(), lambda x: x.exp(), np.exp)
OPS["log"] = Op(unary(positive), lambda x: x.log(), np.log)
OPS["sqrt"] = Op(unary(positive), lambda x: x.sqrt(), np.sqrt)
OPS["tanh"] = Op(unary(), lambda x: x.tanh(), np.tanh)
OPS["sigmoid"] = Op(unary(lambda s: arrays(s, -8, 8)), lambda x: x.sigmoid(), _sigmoid)
OPS["relu"] = Op(unary(away_from_zero), lambda x: x.relu(), lambda x: np.maximum(x, 0.0))
OPS["gelu"] = Op(unary(), lambda x: x.gelu(), _gelu_tanh)
OPS["abs"] = Op(unary(away_from_zero), lambda x: x.abs(), np.abs)
OPS["F.relu"] = Op(unary(away_from_zero), F.relu, lambda x: np.maximum(x, 0.0))
OPS["F.gelu"] = Op(unary(), F.gelu, _gelu_tanh)


# ----- reductions -----
@st.composite
def reduce_cases(draw, values=arrays):
    shape = draw(shapes())
    ndim = len(shape)
    if ndim == 0:
        dim = draw(st.sampled_from([None, 0, -1, (0,)]))
    else:
        dim = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                             st.lists(st.integers(0, ndim - 1), min_size=1, unique=True).flatmap(
                                 lambda ds: st.tuples(*[st.sampled_from([d, d - ndim]) for d in ds]))))
    return (draw(values(shape)),), {"dim": dim, "keepdim": draw(st.booleans())}


def np_axis(x, dim):
    """The NumPy axis for a dim argument (a 0-d array has no axis to reduce)."""
    return () if x.ndim == 0 and dim is not None else dim


OPS["sum"] = Op(reduce_cases(), lambda x, dim, keepdim: x.sum(dim=dim, keepdim=keepdim),
                lambda x, dim, keepdim: np.sum(x, axis=np_axis(x, dim), keepdims=keepdim))
OPS["mean"] = Op(reduce_cases(), lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim),
                 lambda x, dim, keepdim: np.mean(x, axis=np_axis(x, dim), keepdims=keepdim))
OPS["max"] = Op(reduce_cases(values=distinct), lambda x, dim, keepdim: x.max(dim=dim, keepdim=keepdim),
                lambda x, dim, keepdim: np.max(x, axis=np_axis(x, dim), keepdims=keepdim))


# ----- shape ops -----
@st.composite
def reshape_cases(draw):
    shape = draw(shapes())
    size = int(np.prod(shape, dtype=np.int64))
    target = draw(st.sampled_from([(size,), (-1,), shape[::-1], (1,) + shape + (1,), (size, 1), (1, -1)]))
    return (draw(arrays(shape)),), {"shape": target}


OPS["reshape"] = Op(reshape_cases(), lambda x, shape: x.reshape(*shape), lambda x, shape: np.reshape(x, shape))
OPS["view"] = Op(reshape_cases(), lambda x, shape: x.view(shape), lambda x, shape: np.reshape(x, shape))


@st.composite
def transpose_cases(draw):
    shape = draw(shapes(min_dims=1))
    d0, d1 = (draw(st.integers(-len(shape), len(shape) - 1)) for _ in range(2))
    return (draw(arrays(shape)),), {"d0": d0, "d1": d1}


OPS["transpose"] = Op(transpose_cases(), lambda x, d0, d1: x.transpose(d0, d1),
                      lambda x, d0, d1: np.swapaxes(x, d0, d1))
OPS[".T"] = Op(unary(), lambda x: x.T, lambda x: x.T)


@st.composite
def permute_cases(draw):
    shape = draw(shapes())
    perm = draw(st.permutations(range(len(shape))))
    dims = tuple(draw(st.sampled_from([d, d - len(shape)])) for d in perm)
    return (draw(arrays(shape)),), {"dims": dims}


OPS["permute"] = Op(permute_cases(), lambda x, dims: x.permute(*dims), lambda x, dims: np.transpose(x, dims))


@st.composite
def unsqueeze_cases(draw):
    shape = draw(shapes())
    return (draw(arrays(shape)),), {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


OPS["unsqueeze"] = Op(unsqueeze_cases(), lambda x, dim: x.unsqueeze(dim), lambda x, dim: np.expand_dims(x, dim))


@st.composite
def squeeze_cases(draw):
    shape = draw(shapes(min_dims=1, max_side=2))  # many size-1 axes
    return (draw(arrays(shape)),), {"dim": draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))}


def np_squeeze(x, dim):
    if dim is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=dim) if x.shape[dim] == 1 else x  # squeezing a non-1 dim leaves it (as PyTorch)


OPS["squeeze"] = Op(squeeze_cases(), lambda x, dim: x.squeeze(dim), np_squeeze)


# ----- indexing -----
@st.composite
def basic_index_cases(draw):
    shape = draw(shapes(min_dims=1))
    count, ellipsis = draw(st.integers(1, len(shape))), draw(st.booleans())
    parts = []
    for n in (shape[len(shape) - count:] if ellipsis else shape[:count]):  # with `...` first, parts index the last dims
        if draw(st.booleans()):
            parts.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-n - 1, n + 1))
            parts.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1]))))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if ellipsis:
        parts.insert(0, Ellipsis)
    index = tuple(parts)
    x = draw(arrays(shape))
    assume(x[index].size > 0)
    return (x,), {"index": index}


@st.composite
def integer_array_index_cases(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    ids = draw(hnp.arrays(np.int64, draw(shapes(min_dims=1, max_dims=2)), elements=st.integers(-n, n - 1)))
    form = draw(st.sampled_from(["tensor", "numpy", "list"]))
    index = (slice(None),) * axis + ({"tensor": mt.tensor(ids), "numpy": ids, "list": ids.tolist()}[form],)
    return (draw(arrays(shape)),), {"index": index, "np_index": (slice(None),) * axis + (ids,)}


@st.composite
def two_array_index_cases(draw):
    shape = draw(shapes(min_dims=2))
    ids = [draw(hnp.arrays(np.int64, (3,), elements=st.integers(0, n - 1))) for n in shape[:2]]
    return (draw(arrays(shape)),), {"index": (mt.tensor(ids[0]), mt.tensor(ids[1])), "np_index": tuple(ids)}


@st.composite
def bool_mask_cases(draw):
    shape = draw(shapes(min_dims=1))
    mask = draw(hnp.arrays(np.bool_, shape[:draw(st.integers(1, len(shape)))]))
    return (draw(arrays(shape)),), {"index": mt.tensor(mask), "np_index": mask}


OPS["getitem (basic)"] = Op(basic_index_cases(), lambda x, index: x[index], lambda x, index: x[index])
OPS["getitem (integer array, repeats)"] = Op(integer_array_index_cases(), lambda x, index, np_index: x[index],
                                             lambda x, index, np_index: x[np_index])
OPS["getitem (two integer arrays)"] = Op(two_array_index_cases(), lambda x, index, np_index: x[index],
                                         lambda x, index, np_index: x[np_index])
OPS["getitem (bool mask)"] = Op(bool_mask_cases(), lambda x, index, np_index: x[index],
                                lambda x, index, np_index: x[np_index])


# ----- masked_fill, where, cat, stack -----
@st.composite
def masked_fill_cases(draw):
    shape = draw(shapes())
    mask_shape = draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=len(shape), max_side=4)
                      .filter(lambda m: np.broadcast_shapes(m, shape) == shape))
    return (draw(arrays(shape)),), {"mask": draw(hnp.arrays(np.bool_, mask_shape)), "value": draw(floats())}


OPS["masked_fill"] = Op(masked_fill_cases(), lambda x, mask, value: x.masked_fill(mt.tensor(mask), value),
                        lambda x, mask, value: np.where(mask, value, x))


@st.composite
def where_cases(draw):
    shape_c, shape_a, shape_b = draw(broadcast_shapes(num_shapes=3))
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {"cond": draw(hnp.arrays(np.bool_, shape_c))}


OPS["where"] = Op(where_cases(), lambda a, b, cond: mt.where(mt.tensor(cond), a, b),
                  lambda a, b, cond: np.where(cond, a, b))


@st.composite
def where_number_cases(draw):
    shape_c, shape_x = draw(broadcast_shapes())
    return (draw(arrays(shape_x)),), {"cond": draw(hnp.arrays(np.bool_, shape_c)), "c": draw(floats()),
                                      "number_first": draw(st.booleans())}


OPS["where (with a number)"] = Op(
    where_number_cases(),
    lambda x, cond, c, number_first: (mt.where(mt.tensor(cond), c, x) if number_first
                                      else mt.where(mt.tensor(cond), x, c)),
    lambda x, cond, c, number_first: np.where(cond, c, x) if number_first else np.where(cond, x, c))


@st.composite
def cat_cases(draw):
    shape = draw(shapes(min_dims=1))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = [shape[:dim % len(shape)] + (k,) + shape[dim % len(shape) + 1:] for k in sizes]
    return tuple(draw(arrays(s)) for s in parts), {"dim": dim}


@st.composite
def stack_cases(draw):
    shape = draw(shapes())
    count = draw(st.integers(1, 3))
    return tuple(draw(arrays(shape)) for _ in range(count)), {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


OPS["cat"] = Op(cat_cases(), lambda *xs, dim: mt.cat(list(xs), dim=dim), lambda *xs, dim: np.concatenate(xs, axis=dim))
OPS["stack"] = Op(stack_cases(), lambda *xs, dim: mt.stack(list(xs), dim=dim), lambda *xs, dim: np.stack(xs, axis=dim))


# ----- F.linear, F.embedding -----
@st.composite
def linear_cases(draw):
    d_in, d_out = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(shapes(max_dims=2))
    inputs = (draw(arrays(batch + (d_in,))), draw(arrays((d_out, d_in))))
    if draw(st.booleans()):
        inputs += (draw(arrays((d_out,))),)
    return inputs, {}


OPS["F.linear"] = Op(linear_cases(), lambda x, w, b=None: F.linear(x, w, b),
                     lambda x, w, b=None: x @ w.T + (0.0 if b is None else b))


@st.composite
def embedding_cases(draw):
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    ids = draw(hnp.arrays(np.int64, draw(shapes(min_dims=1, max_dims=2)), elements=st.integers(0, n - 1)))
    padding_idx = draw(st.one_of(st.none(), st.integers(0, n - 1)))
    weight = draw(arrays((n, d)))
    return (weight,), {"ids": ids, "padding_idx": padding_idx, "pad_row": weight[padding_idx or 0].copy()}


def np_embedding(weight, ids, padding_idx, pad_row):
    out = weight[ids]
    if padding_idx is not None:  # the padding row is a constant: nudging it must not change the output
        out[ids == padding_idx] = pad_row
    return out


OPS["F.embedding"] = Op(embedding_cases(),
                        lambda w, ids, padding_idx, pad_row: F.embedding(mt.tensor(ids), w, padding_idx=padding_idx),
                        np_embedding)


# ----- the tests -----
@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=30)
@given(data=st.data())
def test_value_and_gradient_match_finite_differences(name, data):
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    check_op(lambda *xs: op.f_mt(*xs, **options), lambda *xs: op.f_np(*xs, **options), inputs)


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=8)
@given(data=st.data())
def test_mt_gradcheck_agrees(name, data):
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    # the padding row is read by the forward but treated as a constant (as in PyTorch): by design not a true gradient
    assume(options.get("padding_idx") is None)
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    assert mt.gradcheck(lambda *xs: op.f_mt(*xs, **options), leaves, atol=1e-6, rtol=1e-5)


@settings(max_examples=30)
@given(shape=shapes(), p=floats(0.1, 0.7), seed=st.integers(0, 2 ** 16), data=st.data())
def test_dropout_value_and_gradient(shape, p, seed, data):
    """Dropout's mask is random: read it from one call, then check that a call with the same seed has the value and
    gradient of x * m / (1-p) (x has no zeros, so the output's zeros mark the dropped places)."""
    x = data.draw(away_from_zero(shape))
    mt.manual_seed(seed)
    mask = F.dropout(mt.tensor(x, dtype=np.float64), p).numpy() != 0
    mt.manual_seed(seed)
    check_op(lambda t: F.dropout(t, p), lambda x: x * mask / (1.0 - p), (x,))
    assert mt.gradcheck(lambda t: (mt.manual_seed(seed), F.dropout(t, p))[1],
                        [mt.tensor(x, dtype=np.float64, requires_grad=True)])


def test_max_ties_share_the_gradient():
    """Documented choice: tied maxima split the gradient equally (the average of the subgradients)."""
    x = mt.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 4.0, 4.5]], dtype=np.float64,
                  requires_grad=True)
    x.max(dim=1).backward(mt.tensor([1.0, 1.0, 1.0], dtype=np.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25], [1, 0, 0, 0]])
    y = mt.tensor([4.0, 1.0, 4.0], requires_grad=True)
    y.max().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.0, 0.5])


def test_relu_and_abs_gradient_at_zero_is_zero():
    """At the kink the engine picks the subgradient 0 (as PyTorch does)."""
    for fn in (lambda t: t.relu(), lambda t: t.abs()):
        x = mt.tensor([0.0, 0.0], requires_grad=True)
        fn(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_relu_of_infinities_is_finite_where_numpy_maximum_is():
    """relu(-inf) is 0 and relu(inf) is inf (a * [a > 0] would give nan at -inf), and the gradient there is 0 / 1."""
    x = mt.tensor([-np.inf, np.inf, -1.0], requires_grad=True)
    y = x.relu()
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0.0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])


def test_every_design_op_is_covered():
    """DESIGN.md's 'Tensor methods and operators' plus F.relu/gelu/dropout/linear/embedding all appear above."""
    required = {"add", "sub", "mul", "div", "pow", "matmul", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
                "gelu", "abs", "sum", "mean", "max", "reshape", "view", "transpose", ".T", "permute", "unsqueeze",
                "squeeze", "getitem (basic)", "getitem (integer array, repeats)", "masked_fill", "where", "cat",
                "stack", "F.relu", "F.gelu", "F.linear", "F.embedding"}
    assert required <= set(OPS), required - set(OPS)
    print(f"\n{len(OPS)} op forms gradient-checked, plus F.dropout")


class _SquareWithWrongBackward(mt.Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, g):
        a, = self.saved_tensors
        return g * a  # should be 2 a g


class _SquareWithWrongForward(mt.Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a + 1e-6

    def backward(self, g):
        a, = self.saved_tensors
        return 2 * a * g


def test_the_checker_itself_catches_wrong_gradients_and_values():
    x = np.array([[0.5, -1.5], [2.0, 1.0]])
    check_op(lambda t: t * t, np.square, (x,))  # the right op passes
    with pytest.raises(AssertionError, match="input 0"):
        check_op(_SquareWithWrongBackward.apply, np.square, (x,))
    with pytest.raises(AssertionError):
        check_op(_SquareWithWrongForward.apply, np.square, (x,))
