"""Every kernel of minitorch/kernels against its reference op (minitorch/ops, minitorch/fused).

A kernel runs on three paths: the GPU kernels on the CuPy stand-in (device "cuda", where `cupy.fuse` applies CuPy's
rules and counts one launch a call), the same GPU kernels on NumPy arrays (registered for the CPU for the test, so the
same bodies run as plain NumPy), and the CPU kernels. Each must agree with the reference op, run on the same
device under `mt.reference_ops()`, in value, in every input gradient and in second derivatives, in float64. Random
ops draw their words as an input, so one seed gives every path the same mask. Then: every registered kernel is
covered, launches per op on the stand-in, and the kernels stay finite for large logits and fully masked rows and keep
float32.
"""
import contextlib

import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F
from conftest import CUPY_STANDIN
from minitorch import backend
from minitorch.core import KERNELS
from tests.graph_ops import ops_of as graph_ops
from minitorch.fused import composed
from minitorch.ops import keep_mask, random_words

pytestmark = pytest.mark.skipif(not mt.cuda_available(), reason="needs CuPy and a GPU, or the CuPy stand-in")
ATOL = 1e-12
PATHS = ["gpu kernels on numpy", "gpu kernels on cuda", "cpu kernels"]


def gpu_kernels_on_the_cpu(monkeypatch):
    """Register each GPU kernel for the CPU too, so that its bodies run on NumPy arrays."""
    for (reference, device), kernel in list(KERNELS.items()):
        if device == "cuda":
            monkeypatch.setitem(KERNELS, (reference, "cpu"), kernel)


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """The device a kernel test runs on, with the kernels of that path registered for it."""
    if request.param == "gpu kernels on numpy":
        gpu_kernels_on_the_cpu(monkeypatch)
        return "cpu"
    return "cuda" if request.param == "gpu kernels on cuda" else "cpu"


def run(fn, arrays, device, seed=None, grad_seed=1):
    """fn(*leaves) on float64 leaves on device, then backward with fixed random weights -> (value, [grads])."""
    if seed is not None:
        mt.manual_seed(seed)
    leaves = [mt.tensor(a, dtype=np.float64, device=device, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    g = np.random.default_rng(grad_seed).standard_normal(out.shape)
    out.backward(mt.tensor(g, dtype=np.float64, device=device))
    return out.numpy(), [np.zeros(t.shape) if t.grad is None else t.grad.numpy() for t in leaves]


def second_order(fn, arrays, device, seed=None):
    """The gradient of <grad(<fn, w>), v> for fixed random w, v: second derivatives through the op."""
    if seed is not None:
        mt.manual_seed(seed)
    leaves = [mt.tensor(a, dtype=np.float64, device=device, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    w = mt.tensor(np.random.default_rng(1).standard_normal(out.shape), dtype=np.float64, device=device)
    grads = mt.grad((out * w).sum(), leaves, create_graph=True, allow_unused=True)
    v = [np.random.default_rng(2 + i).standard_normal(t.shape) for i, t in enumerate(leaves)]
    total = sum((g * mt.tensor(vi, dtype=np.float64, device=device)).sum() for g, vi in zip(grads, v)
                if g is not None)
    if not total.requires_grad:  # a gradient that does not depend on the inputs (relu): second derivatives are 0
        return [np.zeros(t.shape) for t in leaves]
    return [np.zeros(t.shape) if h is None else h.numpy()
            for t, h in zip(leaves, mt.grad(total, leaves, allow_unused=True))]


def assert_agree(first, second):
    (value_a, grads_a), (value_b, grads_b) = first, second
    np.testing.assert_allclose(value_a, value_b, rtol=0, atol=ATOL)
    for a, b in zip(grads_a, grads_b):
        np.testing.assert_allclose(a, b, rtol=0, atol=ATOL)


def agrees_with_the_reference(fn, arrays, device, seed=None):
    """The kernels of the path on device against the reference ops on the same device (the same generator, so the
    same random words): values, gradients, second order."""
    kernel = run(fn, arrays, device, seed)
    with mt.reference_ops():
        reference = run(fn, arrays, device, seed)
    assert_agree(kernel, reference)
    kernel = second_order(fn, arrays, device, seed)
    with mt.reference_ops():
        reference = second_order(fn, arrays, device, seed)
    for a, b in zip(kernel, reference):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3, 8))
W, B = rng.standard_normal(8), rng.standard_normal(8)
Q, K, V = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
QKV = rng.standard_normal((3, 2, 3, 5, 4))
KV = rng.standard_normal((2, 2, 3, 6, 4))
RANDOM_MASK = rng.random((2, 3, 5, 5)) < 0.6
RANDOM_MASK[0, 1, 2] = False                                    # a query with nothing to attend to
MASKS = {"none": None, "padding": np.arange(5) < np.array([5, 2])[:, None, None, None],
         "causal": np.tril(np.ones((5, 5), bool)), "random": RANDOM_MASK}

OPS = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 8, w, b), [X, W, B]),
    "layer_norm (no affine, two dims)": (lambda x: F.layer_norm(x, (3, 8)), [X]),
    "softmax (last dim)": (lambda x: F.softmax(x, -1), [X]),
    "softmax (dim 1)": (lambda x: F.softmax(x, 1), [X]),
    "log_softmax (last dim)": (lambda x: F.log_softmax(x, -1), [X]),
    "log_softmax (dim 0)": (lambda x: F.log_softmax(x, 0), [X]),
    "relu": (lambda x: F.relu(x), [X]),
    "bias_relu": (lambda x, b: F.bias_relu(x, b), [X, B]),
    "gelu (beyond the clip too)": (lambda x: F.gelu(x), [X * 6]),
    "self_attention": (lambda qkv: F.self_attention(qkv, RANDOM_MASK), [QKV]),
    "cross_attention": (lambda q, kv: F.cross_attention(q, kv, np.arange(6) < 4), [Q, KV]),
    "attention (broadcast batch)": (lambda q, k, v: F.scaled_dot_product_attention(q, k[0], v[0]), [Q, K, V]),
}
OPS.update({f"attention ({name} mask)": ((lambda mask: lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask))(
    mask), [Q, K, V]) for name, mask in MASKS.items()})
OPS["lstm_cell"] = (lambda gates, c: mt.cat(list(F.lstm_cell(gates, c)), dim=-1),
                    [rng.standard_normal((4, 12)), rng.standard_normal((4, 3))])
KEEP = np.array([[True], [False], [True], [False]])             # rows 1 and 3 padded: their state carries over
OPS["lstm_cell (padded rows)"] = (lambda gates, c, h: mt.cat(list(F.lstm_cell(gates, c, h, KEEP)), dim=-1),
                                  [rng.standard_normal((4, 12)), rng.standard_normal((4, 3)),
                                   rng.standard_normal((4, 3))])
RANDOM = {  # name: (fn, arrays, seed): a fixed seed gives each path the same words, so the same mask
    "dropout": (lambda x: F.dropout(x, 0.3), [X], 7),
    "dropout_add": (lambda x, y: F.dropout_add(x, y, 0.3), [X, X[::-1].copy()], 7),
    "attention (dropout)": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, RANDOM_MASK, dropout_p=0.3),
                            [Q, K, V], 3),
    "self_attention (dropout)": (lambda qkv: F.self_attention(qkv, RANDOM_MASK, dropout_p=0.3), [QKV], 3),
}


@pytest.mark.parametrize("name", list(OPS))
def test_kernels_agree_with_the_reference(name, path):
    fn, arrays = OPS[name]
    agrees_with_the_reference(fn, arrays, path)


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_kernels_agree_with_the_reference_for_one_seed(name, path):
    fn, arrays, seed = RANDOM[name]
    agrees_with_the_reference(fn, arrays, path, seed)


def test_every_registered_kernel_is_covered(monkeypatch):
    """Each kernel in minitorch.core.KERNELS runs in this file's tests: cuda kernels on NumPy, cpu kernels as they
    are (a new kernel needs a case in OPS, RANDOM or the cross-entropy test here)."""
    seen = set()

    def ops_of(fn, arrays):
        return {type(op) for op in graph_ops(fn(*[mt.tensor(a, dtype=np.float64, requires_grad=True) for a in arrays]))}

    cases = [*OPS.values(), *[(fn, arrays) for fn, arrays, _ in RANDOM.values()],
             (lambda x: F.cross_entropy(x, np.array([1, 0, 3]), label_smoothing=0.1), [X[0, :, :4]])]
    registered = set(KERNELS.values())
    for fn, arrays in cases:
        seen |= ops_of(fn, arrays)
    gpu_kernels_on_the_cpu(monkeypatch)
    for fn, arrays in cases:
        seen |= ops_of(fn, arrays)
    missing = registered - seen
    assert not missing, f"kernels no test here runs: {sorted(k.__name__ for k in missing)}"


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("ignored", ["some", "all"])
@pytest.mark.parametrize("ndim", [2, 3])
def test_cross_entropy_kernels_agree_with_the_reference(reduction, smoothing, ignored, ndim, path):
    logits = rng.standard_normal((3, 4, 7) if ndim == 3 else (6, 7))
    target = np.random.default_rng(2).integers(0, 7, logits.shape[:-1])
    target[..., 1] = 0
    if ignored == "all":
        target[...] = 0
    agrees_with_the_reference(lambda x: F.cross_entropy(x, target, ignore_index=0, label_smoothing=smoothing,
                                                        reduction=reduction), [logits], path)


# ----- random ops: against the composed form with the mask keep_mask makes of the words drawn for the same seed -----
def with_mask(fn, shape, p, device, seed):
    """fn(keep) with keep = keep_mask of the words drawn on device right after manual_seed(seed)."""
    mt.manual_seed(seed)
    keep = keep_mask(random_words(shape, device), p)
    return lambda *ts: fn(keep, *ts)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_and_dropout_add_use_keep_masks_draw(p, path):
    y = rng.standard_normal((4, 3, 8))
    scale = 1.0 / (1.0 - p)
    expected = with_mask(lambda keep, x: x * mt.Tensor._make(keep) * scale, X.shape, p, path, 7)
    assert_agree(run(lambda x: F.dropout(x, p), [X], path, seed=7), run(expected, [X], path))
    expected = with_mask(lambda keep, x, y: x + y * mt.Tensor._make(keep) * scale, y.shape, p, path, 7)
    assert_agree(run(lambda x, y: F.dropout_add(x, y, p), [X, y], path, seed=7), run(expected, [X, y], path))


@pytest.mark.parametrize("packed", ["no", "qkv", "kv"])
def test_attention_dropout_uses_keep_masks_draw(packed, path):
    p, mask = 0.3, MASKS["random"]
    device_mask = backend.to_device(mask, path)   # the composed form's masked_fill takes it on the device
    if packed == "kv":
        fused = (lambda q, kv: F.cross_attention(q, kv, mask[..., :4], dropout_p=p), [Q, KV[:, :, :, :4]])
        expected = with_mask(lambda keep, q, kv: composed.scaled_dot_product_attention(
            q, kv[0], kv[1], device_mask[..., :4], p, keep=keep), mask.shape[:-1] + (4,), p, path, 3)
    elif packed == "qkv":
        fused = (lambda qkv: F.self_attention(qkv, mask, dropout_p=p), [QKV])
        expected = with_mask(lambda keep, qkv: composed.scaled_dot_product_attention(
            qkv[0], qkv[1], qkv[2], device_mask, p, keep=keep), mask.shape, p, path, 3)
    else:
        fused = (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask, dropout_p=p), [Q, K, V])
        expected = with_mask(lambda keep, q, k, v: composed.scaled_dot_product_attention(
            q, k, v, device_mask, p, keep=keep), mask.shape, p, path, 3)
    assert_agree(run(fused[0], fused[1], path, seed=3), run(expected, fused[1], path))


def test_cpu_and_gpu_kernels_draw_the_same_dropout_mask_on_the_cpu(monkeypatch):
    y = rng.standard_normal((4, 3, 8))
    plain = run(lambda x, y: F.dropout_add(x, y, 0.4), [X, y], "cpu", seed=5)
    gpu_kernels_on_the_cpu(monkeypatch)
    assert_agree(run(lambda x, y: F.dropout_add(x, y, 0.4), [X, y], "cpu", seed=5), plain)


def test_packed_attention_differentiates_twice_as_the_unpacked_one():
    """create_graph=True replays the reference op for the packed inputs too: the gradient of a gradient equals the
    one through scaled_dot_product_attention of the parts."""
    mask = MASKS["causal"]
    packed = {"self": (lambda qkv: F.self_attention(qkv, mask), lambda qkv: F.scaled_dot_product_attention(
        qkv[0], qkv[1], qkv[2], mask), QKV[:, :1]),
              "cross": (lambda kv: F.cross_attention(mt.tensor(Q[:1]), kv, mask[:, :5]),
                        lambda kv: F.scaled_dot_product_attention(mt.tensor(Q[:1]), kv[0], kv[1], mask[:, :5]),
                        KV[:, :1, :, :5])}
    for name, (fused, plain, array) in packed.items():
        results = []
        for fn in (fused, plain):
            x = mt.tensor(array, dtype=np.float64, requires_grad=True)
            out = fn(x)
            (g,) = mt.grad((out * out).sum(), [x], create_graph=True)
            (gg,) = mt.grad((g * g).sum(), [x])
            results.append((g.numpy(), gg.numpy()))
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
        assert np.abs(results[0][1]).max() > 1e-3


def test_packed_attention_errors_name_the_argument():
    with pytest.raises(ValueError, match="self_attention: expected qkv"):
        F.self_attention(mt.tensor(KV))
    with pytest.raises(ValueError, match="cross_attention: expected q"):
        F.cross_attention(mt.tensor(Q), mt.tensor(QKV))
    with pytest.raises(ValueError, match="cross_attention: mask of shape"):
        F.cross_attention(mt.tensor(Q), mt.tensor(KV), np.ones((5, 5), bool))


# ----- launches per op on the stand-in -----
def launches(fn, *tensors):
    """(forward, backward) launches of the op fn makes on the stand-in, each a dict by kind (the backward is the op's
    own, without the engine's copies into the leaves' .grad), in a call after the first (which may make what the
    kernels keep for every call of a size, such as cross-entropy's column ids)."""
    import cupy
    fn(*tensors)
    with cupy._standin.count_launches() as forward:
        out = fn(*tensors)
    g = cupy.ones(out.shape, dtype=out.dtype)
    with cupy._standin.count_launches() as backward:
        out._op.backward(g)
    return dict(forward), dict(backward)


LAUNCHES = {  # op: (inputs, forward, backward), each a count by kind
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 8, w, b), [X, W, B], {"fused": 2}, {"fused": 3, "reduction": 1}),
    "softmax": (lambda x: F.softmax(x, -1), [X], {"fused": 3}, {"fused": 2}),
    "log_softmax": (lambda x: F.log_softmax(x, -1), [X], {"fused": 3}, {"fused": 2}),
    "relu": (lambda x: F.relu(x), [X], {"elementwise": 1}, {"fused": 1}),
    "bias_relu": (lambda x, b: F.bias_relu(x, b), [X, B], {"fused": 1}, {"fused": 1}),
    "gelu": (lambda x: F.gelu(x), [X], {"fused": 1}, {"fused": 1}),
    # (the draw of uint16 words is two launches on CuPy 14.2: the cuRAND draw and the add of the low bound)
    "dropout": (lambda x: F.dropout(x, 0.1), [X], {"random": 1, "elementwise": 1, "fused": 1}, {"fused": 1}),
    "dropout_add": (lambda x, y: F.dropout_add(x, y, 0.1), [X, X], {"random": 1, "elementwise": 1, "fused": 1},
                    {"fused": 1}),
    "cross_entropy (mean)": (lambda x: F.cross_entropy(x, np.arange(3) % 2, label_smoothing=0.1), [X[0]],
                             {"fused": 4}, {"fused": 1}),
}


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts launches, which only the CuPy stand-in does")
@pytest.mark.parametrize("name", list(LAUNCHES))
def test_launches_per_op(name):
    fn, arrays, forward, backward = LAUNCHES[name]
    tensors = [mt.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    assert launches(fn, *tensors) == (forward, backward)


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts launches, which only the CuPy stand-in does")
def test_lstm_cell_launches():
    """One kernel forward (h and c), two backward (the gate gradients as one array, dc_prev); the reference op,
    counted the same way, takes at least eight each way."""
    import cupy
    gates, c = (mt.tensor(a, device="cuda", requires_grad=True) for a in OPS["lstm_cell"][1])
    counts = []
    for reference in (False, True):
        with mt.reference_ops() if reference else contextlib.nullcontext():
            F.lstm_cell(gates, c)
            with cupy._standin.count_launches() as forward:
                h, c_next = F.lstm_cell(gates, c)
            gh, gc = (cupy.ones(t.shape, dtype=t.dtype) for t in (h, c_next))
            with cupy._standin.count_launches() as backward:
                h._op.parents[0].backward(gh, gc)
        counts.append((dict(forward), dict(backward)))
    assert counts[0] == ({"fused": 1}, {"fused": 2})
    assert sum(counts[1][0].values()) >= 8 and sum(counts[1][1].values()) >= 8, counts[1]


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts launches, which only the CuPy stand-in does")
def test_lstm_cell_with_padded_rows_launches():
    """With a mask, one kernel forward and three backward (dh_prev the third); the reference's two `where`s forward
    and their four backward are gone."""
    import cupy
    gates, c, h = (mt.tensor(a, device="cuda", requires_grad=True) for a in OPS["lstm_cell (padded rows)"][1])
    keep = cupy.asarray(KEEP)
    F.lstm_cell(gates, c, h, keep)
    with cupy._standin.count_launches() as forward:
        h_next, c_next = F.lstm_cell(gates, c, h, keep)
    gh, gc = (cupy.ones(t.shape, dtype=t.dtype) for t in (h_next, c_next))
    with cupy._standin.count_launches() as backward:
        h_next._op.parents[0].backward(gh, gc)
    assert (dict(forward), dict(backward)) == ({"fused": 1}, {"fused": 3})


ATTENTION = {  # (forward, backward): one kernel copies q, k, v, k^T, v^T, three the softmax; the backward's two,
    # and no copies for the matmuls (CuPy copies an operand that is not C-contiguous)
    "scaled_dot_product_attention": ({"fused": 4, "matmul": 2}, {"fused": 2, "matmul": 4}),
    "self_attention": ({"fused": 4, "matmul": 2}, {"fused": 2, "matmul": 4}),
    "self_attention (dropout)": ({"fused": 5, "matmul": 2, "random": 1, "elementwise": 1}, {"fused": 3, "matmul": 4}),
    "cross_attention": ({"fused": 4, "matmul": 2}, {"fused": 2, "matmul": 4}),
}


@pytest.mark.skipif(not CUPY_STANDIN, reason="counts launches, which only the CuPy stand-in does")
@pytest.mark.parametrize("name", list(ATTENTION))
def test_attention_launches(name):
    q, k, v, qkv, kv = (mt.tensor(a, device="cuda", requires_grad=True) for a in (Q, K, V, QKV, KV))
    fn, inputs = {"scaled_dot_product_attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, RANDOM_MASK), (q, k, v)),
        "self_attention": (lambda x: F.self_attention(x, RANDOM_MASK), (qkv,)),
        "self_attention (dropout)": (lambda x: F.self_attention(x, RANDOM_MASK, 0.2), (qkv,)),
        "cross_attention": (lambda q, kv: F.cross_attention(q, kv), (q, kv))}[name]
    assert launches(fn, *inputs) == ATTENTION[name]


# ----- numerics of the softmax, log-softmax and attention kernels -----
def test_softmax_and_log_softmax_of_large_float32_logits_stay_finite(path):
    raw = (np.random.default_rng(0).standard_normal((6, 11)) * 1e4).astype(np.float32)
    shifted = raw.astype(np.float64) - raw.max(axis=-1, keepdims=True)
    reference = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    for fn, expected in ((F.softmax, np.exp(reference)), (F.log_softmax, reference)):
        x = mt.tensor(raw, device=path, requires_grad=True)
        y = fn(x, -1)
        y.backward(mt.ones(6, 11, device=path))
        assert y.dtype == np.float32 and x.grad.dtype == np.float32
        assert np.isfinite(y.numpy()).all() and np.isfinite(x.grad.numpy()).all()
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_of_all_minus_inf(dtype, path):
    x = mt.tensor([[-np.inf, -np.inf, -np.inf], [0.5, -np.inf, 2.0]], dtype=dtype, device=path, requires_grad=True)
    y = F.softmax(x, dim=-1)
    assert np.array_equal(y.numpy()[0], np.zeros(3))
    y.backward(mt.tensor(np.arange(6.0).reshape(2, 3), dtype=dtype, device=path))
    assert np.isfinite(x.grad.numpy()).all() and np.array_equal(x.grad.numpy()[0], np.zeros(3))
    x = mt.tensor([[-np.inf, -np.inf], [1.0, 3.0]], dtype=dtype, device=path, requires_grad=True)
    y = F.log_softmax(x, dim=-1)
    assert np.isneginf(y.numpy()[0]).all() and not np.isnan(y.numpy()).any()
    y[1].sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_fully_masked_rows_give_zeros_and_zero_gradients(dtype, path):
    q, k, v = (mt.tensor(a[0], dtype=dtype, device=path, requires_grad=True) for a in (Q, K, V))
    mask = np.ones((3, 5, 5), dtype=bool)
    mask[0, 1] = False                          # one row with nothing to attend to
    mask[1] = False                             # a whole head of them
    out = F.scaled_dot_product_attention(q * 100, k, v, mask)   # large scores too
    out.backward(mt.ones(*out.shape, dtype=dtype, device=path))
    assert np.all(out.numpy()[0, 1] == 0) and np.all(out.numpy()[1] == 0)
    assert np.all(q.grad.numpy()[0, 1] == 0) and np.all(q.grad.numpy()[1] == 0)
    for t in (out, q.grad, k.grad, v.grad):
        assert np.isfinite(t.numpy()).all()
    assert np.abs(out.numpy()[0, 0]).sum() > 0


@pytest.mark.parametrize("name", list(OPS) + ["cross_entropy", "dropout", "dropout_add", "attention (dropout)"])
def test_kernels_keep_float32(name, path):
    """Scalars reach the kernels as NumPy scalars of the arrays' dtype: under CuPy's fusion a Python float argument
    would make a float32 kernel compute and return float64."""
    fn, arrays = OPS.get(name, (None, [X]))
    fn = fn or {"cross_entropy": lambda x: F.cross_entropy(x, np.zeros(x.shape[:-1], int), label_smoothing=0.1),
                "dropout": lambda x: F.dropout(x, 0.1), "dropout_add": lambda x: F.dropout_add(x, x * 2, 0.1),
                "attention (dropout)": lambda x: F.scaled_dot_product_attention(x, x, x, dropout_p=0.1)}[name]
    leaves = [mt.tensor(a, dtype=np.float32, device=path, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    grads = out._op.backward(backend.xp_of(out.data).ones(out.shape, dtype=np.float32))
    assert out.dtype == np.float32
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert {g.dtype for g in grads if g is not None} == {np.dtype(np.float32)}
