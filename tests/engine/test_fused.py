"""The fused ops (minitorch/fused): finite-difference gradient checks, agreement with the versions composed from
primitive ops, float32 stability, masks, dropout, errors, and the saved-bytes walk used by the benchmark."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.functional as F
from minitorch.tools import bench_ops
from minitorch.fused import composed
from minitorch.tools.graph_memory import saved_bytes

FAST = settings(max_examples=25, deadline=None)


def leaf(rng, shape, scale=1.0, dtype=np.float64):
    return mt.tensor(rng.standard_normal(shape) * scale, dtype=dtype, requires_grad=True)


def run(fn, arrays, grad_seed=1):
    """fn(*leaves) on fresh float64 leaves, then backward with fixed random weights: (value, [grads])."""
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    g = np.random.default_rng(grad_seed).standard_normal(out.shape)
    out.backward(mt.tensor(g, dtype=np.float64))
    return out.numpy(), [t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for t in leaves]


def assert_same(fused_fn, composed_fn, arrays, atol=1e-10, seed=None):
    """Fused and composed agree in value and in every input gradient (float64). seed: reseed before each, for
    dropout, so both draw the same mask."""
    results = []
    for fn in (fused_fn, composed_fn):
        if seed is not None:
            mt.manual_seed(seed)
        results.append(run(fn, arrays))
    (vf, gf), (vc, gc) = results
    np.testing.assert_allclose(vf, vc, rtol=0, atol=atol)
    for a, b in zip(gf, gc):
        np.testing.assert_allclose(a, b, rtol=0, atol=atol)


# ----- strategies: shapes and options drawn by hypothesis, array values from a seeded NumPy generator -----
seeds = st.integers(0, 2**31 - 1)
small_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def ce_cases(draw):
    """(logits shape, target, ignore_index, label_smoothing, reduction) with some targets ignored."""
    n, c = draw(st.integers(1, 4)), draw(st.integers(2, 5))
    shape = (n, c) if draw(st.booleans()) else (n, draw(st.integers(1, 3)), c)
    rng = np.random.default_rng(draw(seeds))
    ignore_index = draw(st.sampled_from([-100, 0]))           # 0: a padding id that is also a class id
    target = rng.integers(0, c, size=shape[:-1])
    target[rng.random(target.shape) < draw(st.sampled_from([0.0, 0.3, 1.0]))] = ignore_index
    smoothing = draw(st.sampled_from([0.0, 1.0]) | st.floats(0.0, 1.0))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    return shape, target, ignore_index, smoothing, reduction


@st.composite
def attention_cases(draw):
    """(q, k, v shapes, mask or None) with padding, causal, random (with a fully masked row) or no mask."""
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    tq, tk, d, dv = (draw(st.integers(1, 4)) for _ in range(4))
    rng = np.random.default_rng(draw(seeds))
    kind = draw(st.sampled_from(["none", "padding", "causal", "random"]))
    if kind == "padding":  # (..., 1, Tk): the last keys of each sequence are padding, maybe all of them
        lengths = rng.integers(0, tk + 1, size=batch + (1,))
        mask = np.arange(tk) < lengths[..., None]
    elif kind == "causal":  # (Tq, Tk): query i sees keys 0 .. i + max(Tk - Tq, 0)
        mask = np.tril(np.ones((tq, tk), dtype=bool), k=max(tk - tq, 0))
    elif kind == "random":
        mask = rng.random(batch + (tq, tk)) < 0.6
        mask[(0,) * len(batch) + (rng.integers(tq),)] = False   # at least one row with nothing to attend to
    else:
        mask = None
    return batch + (tq, d), batch + (tk, d), batch + (tk, dv), mask


# ----- gradient checks against central finite differences (float64) -----
@FAST
@given(shape=small_shapes, data=st.data(), seed=seeds)
def test_softmax_and_log_softmax_gradcheck(shape, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = leaf(np.random.default_rng(seed), shape, scale=3.0)
    assert mt.gradcheck(lambda x: F.softmax(x, dim=dim), [x])
    assert mt.gradcheck(lambda x: F.log_softmax(x, dim=dim), [x])


@FAST
@given(case=ce_cases(), seed=seeds)
def test_cross_entropy_gradcheck(case, seed):
    shape, target, ignore_index, smoothing, reduction = case
    x = leaf(np.random.default_rng(seed), shape, scale=2.0)
    assert mt.gradcheck(lambda x: F.cross_entropy(x, target, ignore_index, smoothing, reduction), [x])


@FAST
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data(), seed=seeds)
def test_layer_norm_gradcheck(shape, data, seed):
    k = data.draw(st.integers(1, len(shape)))
    norm_shape = shape[len(shape) - k:]
    rng = np.random.default_rng(seed)
    x = leaf(rng, shape, scale=2.0)
    weight = leaf(rng, norm_shape) if data.draw(st.booleans()) else None
    bias = leaf(rng, norm_shape) if data.draw(st.booleans()) else None
    inputs = [t for t in (x, weight, bias) if t is not None]

    def fn(*args):
        args = list(args)
        x_ = args.pop(0)
        w_ = args.pop(0) if weight is not None else None
        b_ = args.pop(0) if bias is not None else None
        return F.layer_norm(x_, norm_shape, w_, b_)

    assert mt.gradcheck(fn, inputs)


@FAST
@given(case=attention_cases(), seed=seeds)
def test_attention_gradcheck(case, seed):
    q_shape, k_shape, v_shape, mask = case
    rng = np.random.default_rng(seed)
    q, k, v = leaf(rng, q_shape), leaf(rng, k_shape), leaf(rng, v_shape)
    assert mt.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask), [q, k, v])


@settings(max_examples=8, deadline=None)
@given(case=attention_cases(), seed=seeds, p=st.sampled_from([0.2, 0.5, 0.9]))
def test_attention_dropout_gradcheck_with_the_same_mask(case, seed, p):
    q_shape, k_shape, v_shape, mask = case
    rng = np.random.default_rng(seed)
    q, k, v = leaf(rng, q_shape), leaf(rng, k_shape), leaf(rng, v_shape)

    def fn(q, k, v):
        mt.manual_seed(seed)  # every evaluation, analytic and finite-difference, draws the same dropout mask
        return F.scaled_dot_product_attention(q, k, v, mask, dropout_p=p, training=True)

    assert mt.gradcheck(fn, [q, k, v])


# ----- fused == composed from primitives (float64, 1e-10), values and gradients -----
@FAST
@given(shape=small_shapes, data=st.data(), seed=seeds)
def test_softmax_and_log_softmax_match_composed(shape, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).standard_normal(shape) * 5
    assert_same(lambda x: F.softmax(x, dim), lambda x: composed.softmax(x, dim), [x])
    assert_same(lambda x: F.log_softmax(x, dim), lambda x: composed.log_softmax(x, dim), [x])


@FAST
@given(case=ce_cases(), seed=seeds)
def test_cross_entropy_matches_composed(case, seed):
    shape, target, ignore_index, smoothing, reduction = case
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    assert_same(lambda x: F.cross_entropy(x, target, ignore_index, smoothing, reduction),
                lambda x: composed.cross_entropy(x, target, ignore_index, smoothing, reduction), [x])


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_in_several_row_blocks_matches_composed(smoothing, monkeypatch):
    """Blocks of 3 rows (rows.BLOCK_BYTES made small): the forward's and the backward's loops over the blocks, and the
    join of the blocks' gradients, on arrays and on Tensors (second derivatives)."""
    from minitorch.fused import rows
    monkeypatch.setattr(rows, "BLOCK_BYTES", 3 * 7 * 8)
    rng = np.random.default_rng(5)
    x, target = rng.standard_normal((10, 7)) * 3, rng.integers(0, 7, 10)
    target[[2, 7]] = -100
    fused = lambda x: F.cross_entropy(x, target, label_smoothing=smoothing)  # noqa: E731
    plain = lambda x: composed.cross_entropy(x, target, label_smoothing=smoothing)  # noqa: E731
    assert_same(fused, plain, [x])
    results = []
    for fn in (fused, plain):
        t = mt.tensor(x, dtype=np.float64, requires_grad=True)
        (g,) = mt.grad(fn(t), [t], create_graph=True)
        (gg,) = mt.grad((g * g).sum(), [t])
        results.append(gg.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-10)
    assert np.abs(results[0]).max() > 1e-3


@FAST
@given(shape=st.lists(st.integers(2, 5), min_size=1, max_size=3).map(tuple), data=st.data(), seed=seeds)
def test_layer_norm_matches_composed(shape, data, seed):
    k = data.draw(st.integers(1, len(shape)))
    norm_shape = shape[len(shape) - k:]
    rng = np.random.default_rng(seed)
    x, w, b = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(norm_shape), rng.standard_normal(norm_shape)
    assert_same(lambda x, w, b: F.layer_norm(x, norm_shape, w, b),
                lambda x, w, b: composed.layer_norm(x, norm_shape, w, b), [x, w, b])
    assert_same(lambda x: F.layer_norm(x, norm_shape), lambda x: composed.layer_norm(x, norm_shape), [x])


@FAST
@given(case=attention_cases(), seed=seeds, p=st.sampled_from([0.0, 0.3]))
def test_attention_matches_composed(case, seed, p):
    q_shape, k_shape, v_shape, mask = case
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in (q_shape, k_shape, v_shape)]
    assert_same(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask, p),
                lambda q, k, v: composed.scaled_dot_product_attention(q, k, v, mask, p), arrays, seed=seed)


def test_nn_layer_norm_module_matches_composed():
    rng = np.random.default_rng(0)
    ln = mt.nn.LayerNorm(6, dtype=np.float64)
    ln.weight.data[:] = rng.standard_normal(6)
    ln.bias.data[:] = rng.standard_normal(6)
    x = rng.standard_normal((2, 3, 6))
    xf = mt.tensor(x, dtype=np.float64, requires_grad=True)
    ln(xf).sum().backward()
    w = mt.tensor(ln.weight.numpy(), dtype=np.float64, requires_grad=True)
    b = mt.tensor(ln.bias.numpy(), dtype=np.float64, requires_grad=True)
    xc = mt.tensor(x, dtype=np.float64, requires_grad=True)
    composed.layer_norm(xc, 6, w, b).sum().backward()
    np.testing.assert_allclose(xf.grad.numpy(), xc.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ln.weight.grad.numpy(), w.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ln.bias.grad.numpy(), b.grad.numpy(), rtol=0, atol=1e-10)


# ----- float32: large logits, dtype kept -----
def reference_log_softmax(x):
    """log-softmax in float64 NumPy, written here independently of the code under test."""
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_float32_logits_of_1e4_stay_finite_and_float32():
    rng = np.random.default_rng(0)
    raw = (rng.standard_normal((6, 11)) * 1e4).astype(np.float32)
    target = np.array([3, 0, -100, 10, 7, 7])
    ref = reference_log_softmax(raw)
    for fn, expected in ((lambda x: F.softmax(x, -1), np.exp(ref)), (lambda x: F.log_softmax(x, -1), ref)):
        x = mt.tensor(raw, requires_grad=True)
        y = fn(x)
        y.backward(mt.ones(6, 11))
        assert y.dtype == np.float32 and x.grad.dtype == np.float32
        assert np.isfinite(y.numpy()).all() and np.isfinite(x.grad.numpy()).all()
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    x = mt.tensor(raw, requires_grad=True)
    loss = F.cross_entropy(x, target, label_smoothing=0.1)
    loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32
    assert np.isfinite(loss.item()) and np.isfinite(x.grad.numpy()).all()
    valid = target != -100
    q = np.full((6, 11), 0.1 / 11)
    q[np.arange(6), np.where(valid, target, 0)] += 0.9
    expected = -(q * ref).sum(axis=1)[valid].mean()
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-5)


def test_float32_stays_float32_in_layer_norm_and_attention():
    rng = np.random.default_rng(0)
    x, w, b = (leaf(rng, s, dtype=np.float32) for s in ((2, 3, 8), (8,), (8,)))
    F.layer_norm(x, 8, w, b).sum().backward()
    q, k, v = (leaf(rng, (2, 3, 4), dtype=np.float32) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, np.tril(np.ones((3, 3), bool)), dropout_p=0.1)
    out.sum().backward()
    for t in (x, w, b, q, k, v):
        assert t.grad.dtype == np.float32
    assert out.dtype == np.float32


# ----- masks -----
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_fully_masked_rows_give_zeros_and_zero_gradients(dtype):
    rng = np.random.default_rng(0)
    q, k, v = (leaf(rng, (2, 4, 3), dtype=dtype) for _ in range(3))
    mask = np.ones((2, 4, 4), dtype=bool)
    mask[0, 1] = False                          # one row with nothing to attend to
    mask[1] = False                             # a whole sequence of them
    out = F.scaled_dot_product_attention(q, k, v, mask)
    out.backward(mt.ones(2, 4, 3, dtype=dtype))
    assert np.all(out.numpy()[0, 1] == 0) and np.all(out.numpy()[1] == 0)
    assert np.all(q.grad.numpy()[0, 1] == 0) and np.all(q.grad.numpy()[1] == 0)
    assert np.all(k.grad.numpy()[1] == 0) and np.all(v.grad.numpy()[1] == 0)
    for t in (out, q.grad, k.grad, v.grad):
        assert np.isfinite(t.numpy()).all()
    assert np.abs(out.numpy()[0, 0]).sum() > 0  # the other rows are untouched


def test_attention_without_mask_equals_an_all_true_mask():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((3, 5, 4)) for _ in range(3))
    assert_same(lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mt.tensor(np.ones((5, 5), bool))), [q, k, v])


def test_attention_dropout_is_reproducible_and_off_in_eval():
    rng = np.random.default_rng(2)
    q, k, v = (mt.tensor(rng.standard_normal((2, 6, 4))) for _ in range(3))
    mt.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    mt.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    c = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    no_drop = F.scaled_dot_product_attention(q, k, v).numpy()
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, training=False).numpy(),
                                  no_drop)


def test_cross_entropy_all_ignored_mean_is_zero_with_zero_gradient():
    x = mt.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=np.float64, requires_grad=True)
    loss = F.cross_entropy(x, np.array([-100, -100, -100]), label_smoothing=0.1)
    loss.backward()
    assert loss.item() == 0.0 and np.all(x.grad.numpy() == 0)


def test_cross_entropy_accepts_a_target_tensor_and_keeps_its_shape_for_none():
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((2, 3, 5)), dtype=np.float64)
    ids = np.array([[1, 4, 0], [2, -100, 3]])
    per_token = F.cross_entropy(x, mt.tensor(ids), reduction="none")
    assert per_token.shape == (2, 3) and per_token.numpy()[1, 1] == 0.0
    valid = ids >= 0
    nll = -np.take_along_axis(reference_log_softmax(x.numpy()), np.where(valid, ids, 0)[..., None], -1)[..., 0]
    np.testing.assert_allclose(per_token.numpy()[valid], nll[valid], rtol=1e-12)
    np.testing.assert_allclose(F.cross_entropy(x, mt.tensor(ids)).item(), nll[valid].mean(), rtol=1e-12)
    np.testing.assert_allclose(F.cross_entropy(x, ids, reduction="sum").item(), nll[valid].sum(), rtol=1e-12)


def test_backward_leaves_saved_arrays_intact_for_a_second_pass():
    """With retain_graph=True a second backward adds the same gradient again: no backward overwrote what it saved."""
    rng = np.random.default_rng(3)
    mask = np.tril(np.ones((4, 4), bool))
    calls = [lambda x: F.softmax(x, -1), lambda x: F.log_softmax(x, 0),
             lambda x: F.cross_entropy(x.reshape(8, 4), np.array([0, 1, 2, 3, -100, 1, 0, 2]), label_smoothing=0.2),
             lambda x: F.layer_norm(x, 4, mt.tensor(np.arange(4.0), dtype=np.float64)),
             lambda x: F.scaled_dot_product_attention(x, x * 2, x, mask, dropout_p=0.3)]
    for call in calls:
        x = leaf(rng, (2, 4, 4))
        out = call(x)
        g = mt.tensor(rng.standard_normal(out.shape), dtype=np.float64)
        out.backward(g, retain_graph=True)
        once = x.grad.numpy().copy()
        out.backward(g)
        np.testing.assert_allclose(x.grad.numpy(), 2 * once, rtol=1e-12, atol=1e-14)


# ----- what is saved for backward -----
def test_softmax_and_log_softmax_save_only_their_output():
    x = mt.randn(3, 7, requires_grad=True)
    for fn in (F.softmax, F.log_softmax):
        y = fn(x, dim=0)
        assert saved_bytes(y) == y.data.nbytes


def test_fused_cross_entropy_and_attention_save_less_than_composed():
    rng = np.random.default_rng(0)
    x = leaf(rng, (4, 6, 50), dtype=np.float32)
    target = rng.integers(0, 50, size=(4, 6))
    fused_ce = saved_bytes(F.cross_entropy(x, target, label_smoothing=0.1))
    assert fused_ce < saved_bytes(composed.cross_entropy(x, target, label_smoothing=0.1))
    assert fused_ce < x.data.nbytes * 1.2  # the probabilities, plus one number or id per row
    q, k, v = (leaf(rng, (2, 4, 16, 8), dtype=np.float32) for _ in range(3))
    mask = np.tril(np.ones((16, 16), bool))
    mt.manual_seed(0)
    fused_attn = saved_bytes(F.scaled_dot_product_attention(q, k, v, mask, dropout_p=0.1))
    mt.manual_seed(0)
    assert fused_attn < saved_bytes(composed.scaled_dot_product_attention(q, k, v, mask, dropout_p=0.1))


def test_saved_bytes_counts_each_buffer_once_and_views_as_their_base():
    a = mt.tensor(np.ones((3, 4)), dtype=np.float64, requires_grad=True)       # 96 bytes
    b = mt.tensor(np.ones((5, 4)), dtype=np.float64, requires_grad=True)       # 160 bytes
    y = a.exp()                      # Exp saves its output (96 bytes)
    z = y * y                        # Mul saves y twice: the same buffer, counted once
    assert saved_bytes(z) == 96
    w = a @ b.T                      # MatMul saves a and a transposed view of b, which counts as b
    assert saved_bytes(w) == 96 + 160
    assert saved_bytes(z.sum() + w.sum()) == 96 + 96 + 160   # y, a and b
    assert saved_bytes(a) == 0


# ----- bad input gives a clear error -----
def test_bad_inputs_raise_clear_errors():
    x = mt.randn(4, 5)
    with pytest.raises(ValueError, match=r"target \(N,\)"):
        F.cross_entropy(x, np.array([0, 1, 2]))
    with pytest.raises(IndexError, match=r"\[0, 5\)"):
        F.cross_entropy(x, np.array([0, 1, 5, 2]))
    with pytest.raises(TypeError, match="integer class ids"):
        F.cross_entropy(x, np.array([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, np.array([0, 1, 2, 3]), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, np.array([0, 1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(x, 4)
    with pytest.raises(ValueError, match="weight"):
        F.layer_norm(x, 5, weight=mt.ones(4))
    q = mt.randn(2, 3, 4)
    with pytest.raises(TypeError, match="mask must be bool"):
        F.scaled_dot_product_attention(q, q, q, mask=np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 2\)"):
        F.scaled_dot_product_attention(q, q, q, mask=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match="expected q"):
        F.scaled_dot_product_attention(q, mt.randn(2, 3, 5), q)
    with pytest.raises(TypeError, match="dim must be an int"):
        F.softmax(q, dim=(0, 1))


def test_bench_ops_prints_a_row_per_op(capsys):
    bench_ops.main(["--batch", "2", "--heads", "2", "--length", "4", "--d-model", "8", "--vocab", "10", "--reps", "1"])
    lines = capsys.readouterr().out.splitlines()
    for name in ("softmax", "log_softmax", "cross_entropy", "layer_norm", "attention"):
        assert any(line.startswith(name) for line in lines), name


@pytest.mark.gpu
@pytest.mark.skipif(not mt.cuda_available(), reason="needs CuPy and a GPU")
def test_fused_ops_on_cuda_match_cpu():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 6)) for _ in range(3)]
    target = np.array([[1, 5, -100], [0, 2, 3]])
    mask = np.tril(np.ones((3, 3), bool))
    ops = [lambda x, *_: F.softmax(x, 1), lambda x, *_: F.log_softmax(x), lambda x, *_: F.cross_entropy(
        x, target, label_smoothing=0.1), lambda x, w, _: F.layer_norm(x, 6),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask)]
    for op in ops:
        results = []
        for device in ("cpu", "cuda"):
            ts = [mt.tensor(a, dtype=np.float64, device=device, requires_grad=True) for a in arrays]
            out = op(*ts)
            out.sum().backward()
            results.append([out.numpy()] + [t.grad.numpy() if t.grad is not None else 0 for t in ts])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_of_all_minus_inf_stay_finite(dtype):
    x = mt.tensor([[-np.inf, -np.inf, -np.inf], [0.5, -np.inf, 2.0]], dtype=dtype, requires_grad=True)
    y = F.softmax(x, dim=-1)
    assert np.array_equal(y.numpy()[0], np.zeros(3))
    e = np.exp(np.array([0.5, 2.0]) - 2.0)
    np.testing.assert_allclose(y.numpy()[1], [e[0] / e.sum(), 0.0, e[1] / e.sum()], rtol=1e-6)
    y.backward(mt.tensor(np.arange(6.0).reshape(2, 3), dtype=dtype))
    assert np.isfinite(x.grad.numpy()).all()
    assert np.array_equal(x.grad.numpy()[0], np.zeros(3))


def test_log_softmax_row_of_all_minus_inf_gives_minus_inf_and_finite_grad():
    x = mt.tensor([[-np.inf, -np.inf], [1.0, 3.0]], dtype=np.float64, requires_grad=True)
    y = F.log_softmax(x, dim=-1)
    assert np.isneginf(y.numpy()[0]).all() and not np.isnan(y.numpy()).any()
    y[1].sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_attention_with_no_keys_gives_zeros_and_zero_grads():
    rng = np.random.default_rng(0)
    q, k, v = leaf(rng, (2, 3, 4)), leaf(rng, (2, 0, 4)), leaf(rng, (2, 0, 5))
    out = F.scaled_dot_product_attention(q, k, v, mask=np.zeros((2, 3, 0), dtype=bool))
    assert out.shape == (2, 3, 5) and not out.numpy().any()
    out.sum().backward()
    assert q.grad is not None and not q.grad.numpy().any()
