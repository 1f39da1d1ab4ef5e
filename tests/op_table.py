"""The table of primitive ops that the op tests read: name -> Op(cases, f_mt, f_np, function).

  cases     a hypothesis strategy of (inputs, options): inputs are float64 arrays (the differentiated leaves), options
            everything else (dims, masks, ids, numbers), passed by keyword to both forms;
  f_mt      the op on Tensors, f_mt(*tensors, **options); a mask or index in options is put on the inputs' device
            (`on`), so that the same entry runs on "cpu" and "cuda";
  f_np      a NumPy reference written here, f_np(*arrays, **options), from which the tests take finite differences;
  function  the minitorch Function class the entry exercises (every Function in minitorch.ops appears at least once).

Read by tests/engine/test_ops_gradcheck.py (first order), tests/engine/test_higher_order.py (second order),
tests/engine/test_backend.py (each op on "cuda" against the CPU) and tests/engine/test_contract.py (what each op
declares it saves). Adding a primitive op is one entry here; a kernel for it also gets a case in
tests/engine/test_kernels.py, which checks that every registered kernel has one.
"""
import math
from collections import namedtuple

import numpy as np
from conftest import arrays, away_from_zero, broadcast_shapes, distinct, floats, shapes
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt
import minitorch.functional as F
from minitorch import backend, ops

Op = namedtuple("Op", "cases f_mt f_np function")
OPS = {}


def on(a, like):
    """The array a (a mask, ids) as a Tensor on the device of the Tensor `like`."""
    return mt.tensor(a, device=like.device)


def raw_on(a, like):
    """The array a as a raw array of like's device (NumPy or CuPy), for ops that take an array option."""
    return backend.to_device(np.asarray(a), like.device)


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
OPS["add"] = Op(broadcast_pair(), lambda a, b: a + b, np.add, ops.Add)
OPS["sub"] = Op(broadcast_pair(), lambda a, b: a - b, np.subtract, ops.Sub)
OPS["mul"] = Op(broadcast_pair(), lambda a, b: a * b, np.multiply, ops.Mul)
OPS["div"] = Op(broadcast_pair(right=lambda s: away_from_zero(s, gap=0.2)), lambda a, b: a / b, np.divide, ops.Div)
OPS["pow"] = Op(broadcast_pair(left=lambda s: arrays(s, 0.2, 2.0), right=lambda s: arrays(s, -2.0, 2.0)),
                lambda a, b: a ** b, np.power, ops.Pow)


# ----- the same operators with a Python number on either side -----
@st.composite
def with_number(draw, values=arrays, numbers=floats()):
    x = draw(shapes().flatmap(values))
    return (x,), {"c": draw(numbers)}


nonzero_numbers = floats(-3, 3).filter(lambda c: abs(c) >= 0.2)
OPS["tensor + number"] = Op(with_number(), lambda x, c: x + c, lambda x, c: x + c, ops.Add)
OPS["number + tensor"] = Op(with_number(), lambda x, c: c + x, lambda x, c: c + x, ops.Add)
OPS["tensor - number"] = Op(with_number(), lambda x, c: x - c, lambda x, c: x - c, ops.Sub)
OPS["number - tensor"] = Op(with_number(), lambda x, c: c - x, lambda x, c: c - x, ops.Sub)
OPS["tensor * number"] = Op(with_number(), lambda x, c: x * c, lambda x, c: x * c, ops.Mul)
OPS["number * tensor"] = Op(with_number(), lambda x, c: c * x, lambda x, c: c * x, ops.Mul)
OPS["tensor / number"] = Op(with_number(numbers=nonzero_numbers), lambda x, c: x / c, lambda x, c: x / c, ops.Div)
OPS["number / tensor"] = Op(with_number(values=lambda s: away_from_zero(s, 0.2)), lambda x, c: c / x,
                            lambda x, c: c / x, ops.Div)
OPS["tensor ** number"] = Op(with_number(values=lambda s: arrays(s, 0.2, 2.0), numbers=floats(-2.5, 3.0)),
                             lambda x, c: x ** c, lambda x, c: np.power(x, c), ops.Pow)
OPS["tensor ** integer (any sign)"] = Op(with_number(numbers=st.sampled_from([1, 2, 3])),
                                         lambda x, c: x ** c, lambda x, c: np.power(x, c), ops.Pow)
OPS["number ** tensor"] = Op(with_number(values=lambda s: arrays(s, -2.0, 2.0), numbers=floats(0.2, 3.0)),
                             lambda x, c: c ** x, lambda x, c: np.power(c, x), ops.Pow)
OPS["neg"] = Op(unary(), lambda x: -x, np.negative, ops.Neg)


# ----- matmul: 1-D and n-D operands, broadcast batch dims -----
@st.composite
def matmul_cases(draw):
    k, m, n = (draw(st.integers(1, 4)) for _ in range(3))
    kind = draw(st.sampled_from(["vector @ vector", "vector @ matrix", "matrix @ vector", "matrix @ matrix"]))
    batch_a, batch_b = draw(broadcast_shapes(max_dims=2, max_side=3))
    shape_a = (k,) if kind.startswith("vector") else batch_a + (m, k)
    shape_b = (k,) if kind.endswith("vector") else batch_b + (k, n)
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {}


OPS["matmul"] = Op(matmul_cases(), lambda a, b: a @ b, np.matmul, ops.MatMul)


# ----- elementwise functions -----
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


OPS["exp"] = Op(unary(), lambda x: x.exp(), np.exp, ops.Exp)
OPS["log"] = Op(unary(positive), lambda x: x.log(), np.log, ops.Log)
OPS["sqrt"] = Op(unary(positive), lambda x: x.sqrt(), np.sqrt, ops.Sqrt)
OPS["tanh"] = Op(unary(), lambda x: x.tanh(), np.tanh, ops.Tanh)
OPS["sigmoid"] = Op(unary(lambda s: arrays(s, -8, 8)), lambda x: x.sigmoid(), _sigmoid, ops.Sigmoid)
OPS["relu"] = Op(unary(away_from_zero), lambda x: x.relu(), lambda x: np.maximum(x, 0.0), ops.Relu)
OPS["gelu"] = Op(unary(), lambda x: x.gelu(), _gelu_tanh, ops.Gelu)
OPS["abs"] = Op(unary(away_from_zero), lambda x: x.abs(), np.abs, ops.Abs)
OPS["F.relu"] = Op(unary(away_from_zero), F.relu, lambda x: np.maximum(x, 0.0), ops.Relu)
OPS["F.gelu"] = Op(unary(), F.gelu, _gelu_tanh, ops.Gelu)
# PyTorch's top-level forms (torch.exp(x) and the like)
OPS["mt.exp"] = Op(unary(), mt.exp, np.exp, ops.Exp)
OPS["mt.log"] = Op(unary(positive), mt.log, np.log, ops.Log)
OPS["mt.tanh"] = Op(unary(), mt.tanh, np.tanh, ops.Tanh)
OPS["mt.sigmoid"] = Op(unary(lambda s: arrays(s, -8, 8)), mt.sigmoid, _sigmoid, ops.Sigmoid)
OPS["mt.relu"] = Op(unary(away_from_zero), mt.relu, lambda x: np.maximum(x, 0.0), ops.Relu)
# PyTorch's top-level math that has no Tensor method (torch.sin(x), torch.maximum(a, b), torch.pow(a, tensor))
OPS["mt.sin"] = Op(unary(), mt.sin, np.sin, ops.Sin)
OPS["mt.cos"] = Op(unary(), mt.cos, np.cos, ops.Cos)


@st.composite
def apart_pair(draw):
    """Two broadcasting arrays whose entries differ by at least 0.1 wherever they meet (no ties: max is smooth)."""
    (a, b), _ = draw(broadcast_pair())
    assume((np.abs(a - b) >= 0.1).all())
    return (a, b), {}


OPS["mt.maximum"] = Op(apart_pair(), mt.maximum, np.maximum, ops.Maximum)
OPS["mt.minimum"] = Op(apart_pair(), mt.minimum, np.minimum, ops.Minimum)
OPS["max(other)"] = Op(apart_pair(), lambda a, b: a.max(b), np.maximum, ops.Maximum)   # torch.max(a, b) is maximum
OPS["mt.min(a, other)"] = Op(apart_pair(), mt.min, np.minimum, ops.Minimum)
OPS["mt.pow (a tensor exponent)"] = Op(broadcast_pair(left=lambda s: arrays(s, 0.2, 2.0),
                                                      right=lambda s: arrays(s, -2.0, 2.0)),
                                       mt.pow, np.power, ops.Pow)
OPS["mt.clamp"] = Op(unary(lambda s: arrays(s, -3, 3).filter(lambda a: (np.abs(np.abs(a) - 1) > 0.1).all())),
                     lambda x: mt.clamp(x, -1.0, 1.0), lambda x: np.clip(x, -1.0, 1.0), ops.Where)


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
                lambda x, dim, keepdim: np.sum(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Sum)
OPS["mean"] = Op(reduce_cases(), lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim),
                 lambda x, dim, keepdim: np.mean(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Mean)
OPS["amax"] = Op(reduce_cases(values=distinct), lambda x, dim, keepdim: x.amax(dim=dim, keepdim=keepdim),
                 lambda x, dim, keepdim: np.max(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Max)
OPS["max()"] = Op(unary(distinct), lambda x: x.max(), np.max, ops.Max)


@st.composite
def one_dim_cases(draw, values=arrays):
    """An input of at least one dim, one int dim of it and keepdim: the arguments of max(dim) and the like."""
    shape = draw(shapes(min_dims=1))
    return (draw(values(shape)),), {"dim": draw(st.integers(-len(shape), len(shape) - 1)),
                                    "keepdim": draw(st.booleans())}


# max(dim) gathers the maxima at their indices (a GetItem), as PyTorch, instead of Max's even split of ties
OPS["max"] = Op(one_dim_cases(values=distinct), lambda x, dim, keepdim: x.max(dim, keepdim=keepdim).values,
                lambda x, dim, keepdim: np.max(x, axis=dim, keepdims=keepdim), ops.GetItem)
OPS["amin"] = Op(reduce_cases(values=distinct), lambda x, dim, keepdim: x.amin(dim=dim, keepdim=keepdim),
                 lambda x, dim, keepdim: np.min(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Min)
OPS["min()"] = Op(unary(distinct), lambda x: x.min(), np.min, ops.Min)
# the 2-norm away from 0, where it has no derivative (its gradient there, 0, is tested in test_tutorial_gaps.py)
OPS["norm"] = Op(reduce_cases(values=lambda s: away_from_zero(s, 0.2)),
                 lambda x, dim, keepdim: x.norm(dim=dim, keepdim=keepdim),
                 lambda x, dim, keepdim: np.sqrt(np.sum(x * x, axis=np_axis(x, dim), keepdims=keepdim)), ops.Norm)
OPS["mt.min"] = Op(one_dim_cases(values=distinct), lambda x, dim, keepdim: mt.min(x, dim, keepdim=keepdim).values,
                   lambda x, dim, keepdim: np.min(x, axis=dim, keepdims=keepdim), ops.GetItem)
OPS["mt.amin"] = Op(reduce_cases(values=distinct), lambda x, dim, keepdim: mt.amin(x, dim, keepdim),
                    lambda x, dim, keepdim: np.min(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Min)
OPS["mt.sum"] = Op(reduce_cases(), lambda x, dim, keepdim: mt.sum(x, dim=dim, keepdim=keepdim),
                   lambda x, dim, keepdim: np.sum(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Sum)
OPS["mt.mean"] = Op(reduce_cases(), lambda x, dim, keepdim: mt.mean(x, dim, keepdim),
                    lambda x, dim, keepdim: np.mean(x, axis=np_axis(x, dim), keepdims=keepdim), ops.Mean)


# ----- shape ops -----
@st.composite
def reshape_cases(draw):
    shape = draw(shapes())
    size = int(np.prod(shape, dtype=np.int64))
    target = draw(st.sampled_from([(size,), (-1,), shape[::-1], (1,) + shape + (1,), (size, 1), (1, -1)]))
    return (draw(arrays(shape)),), {"shape": target}


OPS["reshape"] = Op(reshape_cases(), lambda x, shape: x.reshape(*shape),
                    lambda x, shape: np.reshape(x, shape), ops.Reshape)
OPS["view"] = Op(reshape_cases(), lambda x, shape: x.view(shape), lambda x, shape: np.reshape(x, shape), ops.Reshape)


@st.composite
def transpose_cases(draw):
    shape = draw(shapes(min_dims=1))
    d0, d1 = (draw(st.integers(-len(shape), len(shape) - 1)) for _ in range(2))
    return (draw(arrays(shape)),), {"d0": d0, "d1": d1}


OPS["transpose"] = Op(transpose_cases(), lambda x, d0, d1: x.transpose(d0, d1),
                      lambda x, d0, d1: np.swapaxes(x, d0, d1), ops.Permute)
OPS[".T"] = Op(unary(), lambda x: x.T, lambda x: x.T, ops.Permute)


@st.composite
def permute_cases(draw):
    shape = draw(shapes())
    perm = draw(st.permutations(range(len(shape))))
    dims = tuple(draw(st.sampled_from([d, d - len(shape)])) for d in perm)
    return (draw(arrays(shape)),), {"dims": dims}


OPS["permute"] = Op(permute_cases(), lambda x, dims: x.permute(*dims),
                    lambda x, dims: np.transpose(x, dims), ops.Permute)


@st.composite
def split_heads_cases(draw):
    B, T, n_heads, d = (draw(st.integers(1, 3)) for _ in range(4))
    n = draw(st.sampled_from([None, 1, 2, 3]))
    return (draw(arrays((B, T, (n or 1) * n_heads * d))),), {"n_heads": n_heads, "n": n}


def np_split_heads(x, n_heads, n):
    """The reshape and transpose written out: head h of projection j is x[..., j*h*d + h*d : ... + d]."""
    B, T, width = x.shape
    w = width // (n or 1)   # one projection's width, h d
    d = w // n_heads
    parts = np.stack([x[..., j * w:(j + 1) * w] for j in range(n or 1)])                    # (n, B, T, h d)
    heads = np.stack([parts[..., h * d:(h + 1) * d] for h in range(n_heads)], axis=2)      # (n, B, h, T, d)
    return heads[0] if n is None else heads


OPS["split_heads"] = Op(split_heads_cases(), F.split_heads, np_split_heads, ops.SplitHeads)


def np_merge_heads(x):
    """The heads (B, h, T, d) concatenated along the features, head by head: (B, T, h d)."""
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)


OPS["merge_heads"] = Op(case(st.tuples(*(st.integers(1, 3) for _ in range(4))).flatmap(lambda s: st.tuples(arrays(s)))),
                        F.merge_heads, np_merge_heads, ops.MergeHeads)


@st.composite
def unsqueeze_cases(draw):
    shape = draw(shapes())
    return (draw(arrays(shape)),), {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


OPS["unsqueeze"] = Op(unsqueeze_cases(), lambda x, dim: x.unsqueeze(dim),
                      lambda x, dim: np.expand_dims(x, dim), ops.Reshape)


@st.composite
def squeeze_cases(draw):
    shape = draw(shapes(min_dims=1, max_side=2))  # many size-1 axes
    return (draw(arrays(shape)),), {"dim": draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))}


def np_squeeze(x, dim):
    if dim is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=dim) if x.shape[dim] == 1 else x  # squeezing a non-1 dim leaves it (as PyTorch)


OPS["squeeze"] = Op(squeeze_cases(), lambda x, dim: x.squeeze(dim), np_squeeze, ops.Reshape)
# the in-place forms, on a copy (a leaf that requires grad refuses them, as in PyTorch): their view op becomes the
# tensor's node, so the gradient flows through it to the copy and on to x
OPS["unsqueeze_"] = Op(unsqueeze_cases(), lambda x, dim: x.clone().unsqueeze_(dim),
                       lambda x, dim: np.expand_dims(x, dim), ops.Reshape)
OPS["squeeze_"] = Op(squeeze_cases(), lambda x, dim: x.clone().squeeze_(dim), np_squeeze, ops.Reshape)
OPS["transpose_"] = Op(transpose_cases(), lambda x, d0, d1: x.clone().transpose_(d0, d1),
                       lambda x, d0, d1: np.swapaxes(x, d0, d1), ops.Permute)
OPS["t_"] = Op(shapes(max_dims=2).flatmap(arrays).map(lambda x: ((x,), {})), lambda x: x.clone().t_(),
               lambda x: x.T, ops.Permute)


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
    form = draw(st.sampled_from(["tensor", "array", "list"]))
    return (draw(arrays(shape)),), {"ids": ids, "axis": axis, "form": form}


def index_in_form(x, ids, axis, form):
    """(:, ..., ids) with ids a Tensor, a raw array (both on x's device) or a list."""
    return (slice(None),) * axis + ({"tensor": on, "array": raw_on}[form](ids, x) if form != "list" else ids.tolist(),)


@st.composite
def two_array_index_cases(draw):
    shape = draw(shapes(min_dims=2))
    ids = [draw(hnp.arrays(np.int64, (3,), elements=st.integers(0, n - 1))) for n in shape[:2]]
    return (draw(arrays(shape)),), {"ids": tuple(ids)}


@st.composite
def bool_mask_cases(draw):
    shape = draw(shapes(min_dims=1))
    mask = draw(hnp.arrays(np.bool_, shape[:draw(st.integers(1, len(shape)))]))
    return (draw(arrays(shape)),), {"mask": mask}


OPS["getitem (basic)"] = Op(basic_index_cases(), lambda x, index: x[index], lambda x, index: x[index], ops.GetItem)
OPS["getitem (integer array, repeats)"] = Op(
    integer_array_index_cases(), lambda x, ids, axis, form: x[index_in_form(x, ids, axis, form)],
    lambda x, ids, axis, form: x[(slice(None),) * axis + (ids,)], ops.GetItem)
OPS["getitem (two integer arrays)"] = Op(two_array_index_cases(), lambda x, ids: x[on(ids[0], x), on(ids[1], x)],
                                         lambda x, ids: x[ids], ops.GetItem)
OPS["getitem (bool mask)"] = Op(bool_mask_cases(), lambda x, mask: x[on(mask, x)], lambda x, mask: x[mask],
                                ops.GetItem)


# ----- masked_fill, where, cat, stack -----
@st.composite
def masked_fill_cases(draw):
    shape = draw(shapes())
    mask_shape = draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=len(shape), max_side=4)
                      .filter(lambda m: np.broadcast_shapes(m, shape) == shape))
    return (draw(arrays(shape)),), {"mask": draw(hnp.arrays(np.bool_, mask_shape)), "value": draw(floats())}


OPS["masked_fill"] = Op(masked_fill_cases(), lambda x, mask, value: x.masked_fill(on(mask, x), value),
                        lambda x, mask, value: np.where(mask, value, x), ops.MaskedFill)


@st.composite
def where_cases(draw):
    shape_c, shape_a, shape_b = draw(broadcast_shapes(num_shapes=3))
    return (draw(arrays(shape_a)), draw(arrays(shape_b))), {"cond": draw(hnp.arrays(np.bool_, shape_c))}


OPS["where"] = Op(where_cases(), lambda a, b, cond: mt.where(on(cond, a), a, b),
                  lambda a, b, cond: np.where(cond, a, b), ops.Where)


@st.composite
def where_number_cases(draw):
    shape_c, shape_x = draw(broadcast_shapes())
    return (draw(arrays(shape_x)),), {"cond": draw(hnp.arrays(np.bool_, shape_c)), "c": draw(floats()),
                                      "number_first": draw(st.booleans())}


OPS["where (with a number)"] = Op(
    where_number_cases(),
    lambda x, cond, c, number_first: (mt.where(on(cond, x), c, x) if number_first
                                      else mt.where(on(cond, x), x, c)),
    lambda x, cond, c, number_first: np.where(cond, c, x) if number_first else np.where(cond, x, c), ops.Where)


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


OPS["cat"] = Op(cat_cases(), lambda *xs, dim: mt.cat(list(xs), dim=dim), lambda *xs, dim: np.concatenate(xs, axis=dim),
                ops.Cat)
OPS["stack"] = Op(stack_cases(), lambda *xs, dim: mt.stack(list(xs), dim=dim), lambda *xs, dim: np.stack(xs, axis=dim),
                  ops.Stack)


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
                     lambda x, w, b=None: x @ w.T + (0.0 if b is None else b), ops.Linear)


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
                        lambda w, ids, padding_idx, pad_row: F.embedding(on(ids, w), w, padding_idx=padding_idx),
                        np_embedding, ops.Embedding)




# ----- forms that only the second-order and device checks had, and the ops without a Tensor method -----
def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


OPS["mul (same tensor twice)"] = Op(unary(), lambda a: a * a, np.square, ops.Mul)
# the block's second input is captured, not passed: the non-reentrant form finds it and gives it its gradient
OPS["checkpoint (use_reentrant=False)"] = Op(
    shapes().flatmap(lambda s: st.tuples(arrays(s), arrays(s))).map(lambda xw: (xw, {})),
    lambda x, w: mt.utils.checkpoint.checkpoint(lambda v: (v * w).tanh() * v, x, use_reentrant=False),
    lambda x, w: np.tanh(x * w) * x, mt.utils.checkpoint.NonReentrantCheckpoint)
OPS["mt.mm"] = Op(shapes(min_dims=2, max_dims=2).flatmap(lambda s: st.tuples(arrays(s), arrays(s[::-1])))
                 .map(lambda ab: (ab, {})), mt.mm, np.matmul, ops.MatMul)
OPS["Tensor.mm"] = Op(shapes(min_dims=2, max_dims=2).flatmap(lambda s: st.tuples(arrays(s), arrays(s[::-1])))
                      .map(lambda ab: (ab, {})), lambda a, b: a.mm(b), np.matmul, ops.MatMul)
OPS["matmul (a @ a.T)"] = Op(shapes(min_dims=2, max_dims=2).flatmap(arrays).map(lambda x: ((x,), {})),
                             lambda a: a @ a.T, lambda a: a @ a.T, ops.MatMul)
OPS["bias_relu"] = Op(broadcast_pair().filter(lambda c: np.abs(c[0][0] + c[0][1]).min() > 0.1), F.bias_relu,
                      lambda a, b: np.maximum(a + b, 0.0), ops.BiasRelu)
OPS["erf"] = Op(unary(), lambda a: ops.Erf.apply(a), _erf, ops.Erf)
OPS["cast (times its input)"] = Op(unary(), lambda a: ops.Cast.apply(a, dtype=np.float64) * a, np.square, ops.Cast)
OPS["to (the same device)"] = Op(unary(), lambda a: ops.ToDevice.apply(a, device=a.device) * a, np.square,
                                 ops.ToDevice)


@st.composite
def index_add_cases(draw):
    n, d = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    ids = draw(hnp.arrays(np.int64, (draw(st.integers(1, 5)),), elements=st.integers(0, n - 1)))
    return (draw(arrays((len(ids), d))),), {"ids": ids, "n": n}


def np_index_add(g, ids, n):
    out = np.zeros((n,) + g.shape[1:])
    np.add.at(out, ids, g)
    return out


OPS["index_add (getitem's backward)"] = Op(
    index_add_cases(),
    lambda g, ids, n: ops.IndexAdd.apply(g, index=raw_on(ids, g), shape=(n,) + g.shape[1:], advanced=True),
    np_index_add, ops.IndexAdd)


@st.composite
def raw_embedding_cases(draw):
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    ids = draw(hnp.arrays(np.int64, draw(shapes(min_dims=1, max_dims=2)), elements=st.integers(0, n - 1)))
    return (draw(arrays((n, d))),), {"ids": ids}


OPS["embedding (the op)"] = Op(raw_embedding_cases(), lambda w, ids: ops.Embedding.apply(on(ids, w), w),
                               lambda w, ids: w[ids], ops.Embedding)


@st.composite
def expand_cases(draw):
    shape, target = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=4)
                         .map(lambda b: (b.input_shapes[0], b.result_shape)))
    return (draw(arrays(shape)),), {"target": target}


OPS["expand (sum's backward)"] = Op(expand_cases(), lambda x, target: ops.Expand.apply(x, shape=target),
                                    lambda x, target: np.broadcast_to(x, target), ops.Expand)


# ----- dropout: the random words are an input (an option here), so the mask is known to the NumPy form -----
@st.composite
def dropout_cases(draw, count=1):
    shape = draw(shapes())
    xs = tuple(draw(arrays(shape)) for _ in range(count))
    words = draw(hnp.arrays(np.uint16, shape))
    return xs, {"words": words, "p": draw(floats(0.1, 0.7))}


def np_keep(words, p):
    """words >= p * 2^16 (rounded): the kept places, computed here from the draw."""
    return words >= min(round(p * 65536), 65535)


OPS["dropout"] = Op(dropout_cases(), lambda x, words, p: ops.Dropout.apply(x, raw_on(words, x), p=p),
                    lambda x, words, p: x * np_keep(words, p) / (1.0 - p), ops.Dropout)
OPS["dropout_add"] = Op(dropout_cases(count=2),
                        lambda x, y, words, p: ops.DropoutAdd.apply(x, y, raw_on(words, x), p=p),
                        lambda x, y, words, p: x + y * np_keep(words, p) / (1.0 - p), ops.DropoutAdd)


# ----- convolution and pooling (ops/conv.py), and the window copies they are built on (ops/windows.py) -----
@st.composite
def window_cases(draw, pool=False):
    """An image batch (N, C, H, W) and a window (kernel, stride, padding, dilation) that fits it."""
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride, dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2))), (draw(st.integers(1, 2)), 1)
    # a pooling window of padding alone has the maximum -inf: with dilation, pooling cases take no padding
    padding = (draw(st.integers(0, (k[0] // 2 if dilation[0] == 1 else 0) if pool else 1)),
               draw(st.integers(0, k[1] // 2 if pool else 1)))
    size = tuple(dilation[i] * (k[i] - 1) + 1 - 2 * padding[i] + draw(st.integers(0, 2)) for i in range(2))
    assume(min(size) >= 1)
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + size
    x = draw(distinct(shape, gap=0.3) if pool else arrays(shape))
    return x, {"w": ops.windows.window(k, stride, padding, dilation)}


def np_windows(x, w, pad_value=0.0):
    """(N, C, kh, kw, Ho, Wo): each window of x by its definition, an element at a time."""
    padded = np.pad(x, ((0, 0), (0, 0), (w.ph, w.ph), (w.pw, w.pw)), constant_values=pad_value)
    ho = (padded.shape[2] - w.dh * (w.kh - 1) - 1) // w.sh + 1
    wo = (padded.shape[3] - w.dw * (w.kw - 1) - 1) // w.sw + 1
    out = np.zeros(x.shape[:2] + (w.kh, w.kw, ho, wo))
    for i, j, y, z in np.ndindex(w.kh, w.kw, ho, wo):
        out[:, :, i, j, y, z] = padded[:, :, y * w.sh + i * w.dh, z * w.sw + j * w.dw]
    return out


def np_unwindows(cols, w, in_shape):
    """The adjoint of np_windows: each entry added back to the place it was read from, the padding dropped."""
    n, c, h, width = in_shape
    padded = np.zeros((n, c, h + 2 * w.ph, width + 2 * w.pw))
    for i, j, y, z in np.ndindex(cols.shape[2:]):
        padded[:, :, y * w.sh + i * w.dh, z * w.sw + j * w.dw] += cols[:, :, i, j, y, z]
    return padded[:, :, w.ph:w.ph + h, w.pw:w.pw + width]


@st.composite
def conv_cases(draw):
    x, options = draw(window_cases())
    w = options["w"]
    n_out = draw(st.integers(1, 2))
    return (x, draw(arrays((n_out, x.shape[1], w.kh, w.kw))), draw(arrays((n_out,)))), options


def np_conv2d(x, weight, bias, w):
    return np.einsum("nckl...,ockl->no...", np_windows(x, w), weight) + bias[:, None, None]


def mt_conv2d(x, weight, bias, w):
    return F.conv2d(x, weight, bias, (w.sh, w.sw), (w.ph, w.pw), (w.dh, w.dw))


@st.composite
def col2im_cases(draw):
    x, options = draw(window_cases())
    cols_shape = np_windows(x, options["w"]).shape
    return (draw(arrays(cols_shape)),), {**options, "in_shape": x.shape}


OPS["conv2d"] = Op(conv_cases(), mt_conv2d, np_conv2d, ops.conv.Conv2d)
OPS["max_pool2d"] = Op(window_cases(pool=True).map(lambda c: ((c[0],), c[1])),
                       lambda x, w: F.max_pool2d(x, (w.kh, w.kw), (w.sh, w.sw), (w.ph, w.pw), (w.dh, w.dw)),
                       lambda x, w: np_windows(x, w, -np.inf).max(axis=(2, 3)), ops.conv.MaxPool2d)
OPS["avg_pool2d"] = Op(window_cases(pool=True).map(lambda c: ((c[0],), {"w": c[1]["w"]._replace(dh=1, dw=1)})),
                       lambda x, w: F.avg_pool2d(x, (w.kh, w.kw), (w.sh, w.sw), (w.ph, w.pw)),
                       lambda x, w: np_windows(x, w).mean(axis=(2, 3)), ops.conv.AvgPool2d)
OPS["im2col"] = Op(window_cases().map(lambda c: ((c[0],), c[1])), lambda x, w: ops.windows.Im2Col.apply(x, w=w),
                   np_windows, ops.windows.Im2Col)
OPS["col2im"] = Op(col2im_cases(), lambda cols, w, in_shape: ops.windows.Col2Im.apply(cols, w=w, in_shape=in_shape),
                   np_unwindows, ops.windows.Col2Im)
