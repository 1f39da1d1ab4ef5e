"""nn.RNN, nn.LSTM, nn.GRU and the cells (RNNCell, LSTMCell, GRUCell) with PyTorch's interface (against a NumPy
form written here, by central finite differences, and against torch.nn with the weights copied), nn.Flatten /
nn.Unflatten, nn.NLLLoss (F.nll_loss), nn.LogSoftmax."""
import numpy as np
import pytest
from finite_differences import central_differences

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

RNG = np.random.default_rng(7)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_np(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One layer, one direction, x (T, B, I): the outputs (T, B, H), PyTorch's equations."""
    H, outs = h.shape[-1], []
    for t in range(x.shape[0]):
        a = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), np.tanh(a[:, 2 * H:3 * H]), sigmoid(a[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs)


def gru_np(x, h, w_ih, w_hh, b_ih, b_hh):
    H, outs = h.shape[-1], []
    for t in range(x.shape[0]):
        gi, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        r, z = sigmoid(gi[:, :H] + gh[:, :H]), sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs)


def rnn_np(x, h, w_ih, w_hh, b_ih, b_hh, act=np.tanh):
    outs = []
    for t in range(x.shape[0]):
        h = act(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        outs.append(h)
    return np.stack(outs)


def relu_np(a):
    return np.maximum(a, 0)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_gradients_against_finite_differences(nonlinearity):
    T, B, D, H = 3, 2, 3, 2
    x, h0 = RNG.standard_normal((T, B, D)), RNG.standard_normal((1, B, H))
    model = nn.RNN(D, H, nonlinearity=nonlinearity, dtype=np.float64)
    weights = [p.numpy().copy() for p in model.parameters()]
    w_out = RNG.standard_normal((T, B, H))
    xt, ht = (mt.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, h0))
    out, h_n = model(xt, ht)
    act = np.tanh if nonlinearity == "tanh" else relu_np
    np.testing.assert_allclose(out.numpy(), rnn_np(x, h0[0], *weights, act=act), rtol=1e-12)
    np.testing.assert_allclose(h_n.numpy()[0], out.numpy()[-1], rtol=0)
    (out * mt.tensor(w_out, dtype=np.float64)).sum().backward()
    expected = central_differences(lambda x, h, *w: float((w_out * rnn_np(x, h[0], *w, act=act)).sum()),
                                   [x, h0] + weights)
    got = [xt.grad, ht.grad] + [p.grad for p in model.parameters()]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_gradients_against_finite_differences(kind):
    T, B, D, H = 3, 2, 3, 2
    x, h0, c0 = RNG.standard_normal((T, B, D)), RNG.standard_normal((1, B, H)), RNG.standard_normal((1, B, H))
    model = getattr(nn, kind)(D, H, dtype=np.float64)
    weights = [p.numpy().copy() for p in model.parameters()]
    w_out = RNG.standard_normal((T, B, H))
    xt, ht, ct = (mt.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, h0, c0))
    out, _ = model(xt, (ht, ct)) if kind == "LSTM" else model(xt, ht)
    (out * mt.tensor(w_out, dtype=np.float64)).sum().backward()
    if kind == "LSTM":
        expected = central_differences(lambda x, h, c, *w: float((w_out * lstm_np(x, h[0], c[0], *w)).sum()),
                                       [x, h0, c0] + weights)
        got = [xt.grad, ht.grad, ct.grad] + [p.grad for p in model.parameters()]
    else:
        expected = central_differences(lambda x, h, *w: float((w_out * gru_np(x, h[0], *w)).sum()),
                                       [x, h0] + weights)
        got = [xt.grad, ht.grad] + [p.grad for p in model.parameters()]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6, atol=1e-8)


CONFIGS = [dict(), dict(batch_first=True), dict(num_layers=2), dict(bidirectional=True),
           dict(num_layers=2, bidirectional=True, batch_first=True), dict(bias=False), dict(unbatched=True),
           dict(initial_state=True, num_layers=2, bidirectional=True)]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN", "RNN-relu"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(c) or "default")
def test_matches_torch_with_the_weights_copied(kind, config):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    config = dict(config)
    unbatched, initial = config.pop("unbatched", False), config.pop("initial_state", False)
    if kind == "RNN-relu":
        kind, config["nonlinearity"] = "RNN", "relu"
    D, H, T, B = 3, 4, 5, 2
    ours = getattr(nn, kind)(D, H, dtype=np.float64, **config)
    theirs = getattr(torch.nn, kind)(D, H, dtype=torch.float64, **config)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    with torch.no_grad():
        for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert p.shape == tuple(q.shape)
            q.copy_(torch.from_numpy(p.numpy()))
    shape = (T, D) if unbatched else (B, T, D) if config.get("batch_first") else (T, B, D)
    x = RNG.standard_normal(shape)
    xs = mt.tensor(x, dtype=np.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    args = ([], [])
    if initial:
        n = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
        states = [RNG.standard_normal((n, B, H)) for _ in range(2 if kind == "LSTM" else 1)]
        mine = [mt.tensor(s, dtype=np.float64) for s in states]
        yours = [torch.tensor(s) for s in states]
        args = ([tuple(mine)], [tuple(yours)]) if kind == "LSTM" else ([mine[0]], [yours[0]])
    out, state = ours(xs[0], *args[0])
    ref, ref_state = theirs(xs[1], *args[1])
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    for s, r in zip(*(((st,) if kind == "GRU" else st) for st in (state, ref_state))):
        np.testing.assert_allclose(s.numpy(), r.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = RNG.standard_normal(out.shape)
    last = state[0] if kind == "LSTM" else state
    ((out * mt.tensor(w, dtype=np.float64)).sum() + last.sum()).backward()
    ((ref * torch.tensor(w)).sum() + (ref_state[0] if kind == "LSTM" else ref_state).sum()).backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_lstm_errors_and_dropout_only_in_training():
    m = nn.LSTM(3, 2, num_layers=2, dropout=0.5)
    with pytest.raises(ValueError, match="Expected 3, got 4"):
        m(mt.zeros(5, 1, 4))
    with pytest.raises(RuntimeError, match=r"expected h0 of size \(2, 1, 2\)"):
        m(mt.zeros(5, 1, 3), (mt.zeros(1, 1, 2), mt.zeros(1, 1, 2)))
    x = mt.randn(4, 2, 3)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def _torch_state_into(ours, theirs):
    """Load torch's state_dict into ours as numbers (what a user converting a checkpoint does)."""
    ours.load_state_dict({k: mt.tensor(v.detach().numpy(), dtype=np.float64) for k, v in theirs.state_dict().items()})


def test_rnn_loads_torchs_state_dict_and_gives_its_outputs():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    torch.manual_seed(0)
    theirs = torch.nn.RNN(3, 4, 2, "relu", dtype=torch.float64, bidirectional=True)
    ours = nn.RNN(3, 4, 2, "relu", dtype=np.float64, bidirectional=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [tuple(v.shape) for v in theirs.state_dict().values()] == [v.shape for v in ours.state_dict().values()]
    _torch_state_into(ours, theirs)
    x = RNG.standard_normal((6, 1, 3))
    out, h_n = ours(mt.tensor(x, dtype=np.float64))
    ref, ref_h = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_n.numpy(), ref_h.detach().numpy(), rtol=1e-10, atol=1e-12)
    # the initial weights: PyTorch's U(-1/sqrt(H), 1/sqrt(H)) for every parameter
    fresh = nn.RNN(3, 16, dtype=np.float64)
    for _, w in fresh.named_parameters():
        assert np.abs(w.numpy()).max() <= 0.25 and np.abs(w.numpy()).max() > 0.2


CELLS = {"RNNCell": {}, "RNNCell-relu": {"nonlinearity": "relu"}, "LSTMCell": {}, "GRUCell": {}}


@pytest.mark.parametrize("kind", list(CELLS))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape, hidden", [((2, 3), True), ((2, 3), False), ((3,), True), ((3,), False)])
def test_cells_match_torch(kind, bias, shape, hidden):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    name, kw = kind.split("-")[0], CELLS[kind]
    theirs = getattr(torch.nn, name)(3, 4, bias, dtype=torch.float64, **kw)
    ours = getattr(nn, name)(3, 4, bias, dtype=np.float64, **kw)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    _torch_state_into(ours, theirs)
    x = RNG.standard_normal(shape)
    n_states = 2 if name == "LSTMCell" else 1
    states = [RNG.standard_normal(shape[:-1] + (4,)) for _ in range(n_states)] if hidden else []
    xs = mt.tensor(x, dtype=np.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    mine = [mt.tensor(h, dtype=np.float64, requires_grad=True) for h in states]
    yours = [torch.tensor(h, requires_grad=True) for h in states]

    def pack(hs):   # the state as the cell takes it: None, h, or (h, c)
        return None if not hs else tuple(hs) if n_states == 2 else hs[0]
    out, ref = ours(xs[0], pack(mine)), theirs(xs[1], pack(yours))
    outs, refs = (out, ref) if n_states == 2 else ((out,), (ref,))
    w = [RNG.standard_normal(o.shape) for o in outs]
    for o, r in zip(outs, refs):
        assert o.shape == tuple(r.shape) and o.dtype == np.float64
        np.testing.assert_allclose(o.numpy(), r.detach().numpy(), rtol=1e-12, atol=1e-14)
    sum((o * mt.tensor(v, dtype=np.float64)).sum() for o, v in zip(outs, w)).backward()
    sum((r * torch.tensor(v)).sum() for r, v in zip(refs, w)).backward()
    pairs = [(xs[0].grad, xs[1].grad)] + [(a.grad, b.grad) for a, b in zip(mine, yours)]
    named = dict(ours.named_parameters())
    pairs += [(named[n].grad, q.grad) for n, q in theirs.named_parameters()]
    for a, b in pairs:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_rnn_errors_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    cases = [lambda m, t: m.RNN(3, 4, nonlinearity="sigmoid"),
             lambda m, t: m.RNN(3, 4, 2)(t.zeros(5, 1, 3), t.zeros(1, 1, 4)),
             lambda m, t: m.RNNCell(3, 4)(t.zeros(2, 1, 3)),
             lambda m, t: m.RNNCell(3, 4)(t.zeros(2, 3), t.zeros(1, 2, 4)),
             lambda m, t: m.RNNCell(3, 4)(t.zeros(2, 5)),
             lambda m, t: m.LSTMCell(3, 4)(t.zeros(2, 3), (t.zeros(2, 4), t.zeros(2, 1, 4))),
             lambda m, t: m.GRUCell(3, 4)(t.zeros(1, 2, 3)),
             lambda m, t: m.GRUCell(3, 4)(t.zeros(2, 3), t.zeros(3, 4))]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch.nn, torch)
        with pytest.raises(type(theirs.value)):
            case(nn, mt)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")   # (PyTorch refuses it only when called)


def test_rnn_dropout_between_layers_only_in_training():
    m = nn.RNN(3, 8, num_layers=2, dropout=0.5)
    x = mt.randn(4, 2, 3)
    a, b = m(x)[0], m(x)[0]
    assert not np.array_equal(a.numpy(), b.numpy())   # a new mask each call
    m.eval()
    np.testing.assert_array_equal(m(x)[0].numpy(), m(x)[0].numpy())
    m1 = nn.RNN(3, 8, num_layers=1, dropout=0.5)   # one layer: nothing between layers to drop
    np.testing.assert_array_equal(m1(x)[0].numpy(), m1(x)[0].numpy())


# ----- Flatten, Unflatten -----
def test_flatten_and_unflatten_as_torch():
    x = mt.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).double()
    assert nn.Flatten()(x).shape == (2, 60) and nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == (2, 3, 20)
    np.testing.assert_array_equal(nn.Unflatten(-1, (-1, 12))(nn.Flatten()(x)).numpy(), x.numpy().reshape(2, 5, 12))
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    t = torch.from_numpy(x.numpy())
    for ours, theirs in [(nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(1, 2), torch.nn.Flatten(1, 2)),
                         (nn.Unflatten(2, (2, 2)), torch.nn.Unflatten(2, (2, 2)))]:
        np.testing.assert_array_equal(ours(x).numpy(), theirs(t).numpy())


# ----- NLLLoss -----
def nll_np(logp, target, weight, ignore_index, reduction):
    w = np.array([0.0 if t == ignore_index else (1.0 if weight is None else weight[t]) for t in target])
    loss = -np.array([lp[t] if t != ignore_index else 0.0 for lp, t in zip(logp, target)]) * w
    return loss.sum() / w.sum() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_against_its_formula_by_finite_differences(reduction, weighted):
    logp = RNG.standard_normal((6, 4))
    target = np.array([0, 3, 1, -100, 2, 3])
    weight = RNG.uniform(0.5, 2.0, 4) if weighted else None
    x = mt.tensor(logp, dtype=np.float64, requires_grad=True)
    loss = nn.NLLLoss(weight=None if weight is None else mt.tensor(weight, dtype=np.float64),
                      reduction=reduction)(x, mt.tensor(target))
    np.testing.assert_allclose(loss.numpy(), nll_np(logp, target, weight, -100, reduction), rtol=1e-12)
    w = RNG.standard_normal(loss.shape)
    (loss * mt.tensor(w, dtype=np.float64)).sum().backward()
    expected, = central_differences(lambda a: float((w * nll_np(a, target, weight, -100, reduction)).sum()), [logp])
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-9)


def test_log_softmax_then_nll_loss_is_cross_entropy_and_matches_torch():
    logits = mt.tensor(RNG.standard_normal((5, 3)), dtype=np.float64)
    target = mt.tensor([0, 2, 1, 1, 0])
    a = nn.NLLLoss()(nn.LogSoftmax(dim=1)(logits), target)
    np.testing.assert_allclose(a.item(), nn.CrossEntropyLoss()(logits, target).item(), rtol=1e-12)
    assert F.nll_loss(F.log_softmax(logits[0], -1), target[0]).shape == ()
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    ref = torch.nn.NLLLoss(ignore_index=1)(torch.log_softmax(torch.from_numpy(logits.numpy()), 1),
                                          torch.from_numpy(target.numpy()))
    ours = nn.NLLLoss(ignore_index=1)(F.log_softmax(logits, -1), target)
    np.testing.assert_allclose(ours.item(), ref.item(), rtol=1e-12)


def test_lstm_gru_and_nll_loss_on_the_device_match_the_cpu(device):
    """The same computation on the device (a GPU, or the CuPy stand-in) and on the CPU: values and gradients."""
    x = RNG.standard_normal((4, 2, 3))
    target = np.array([0, 2, 1, -100])
    results = {}
    for where in ("cpu", device):
        mt.manual_seed(0)
        lstm, gru = nn.LSTM(3, 5, num_layers=2, bidirectional=True, dtype=np.float64), nn.GRU(3, 5, dtype=np.float64)
        lstm.to(where)
        gru.to(where)
        xt = mt.tensor(x, dtype=np.float64, device=where, requires_grad=True)
        out, (h, c) = lstm(xt)
        g_out, g_h = gru(xt)
        logp = F.log_softmax(out[:, 0, :3] + g_out[:, 1, :3], -1)
        loss = nn.NLLLoss()(logp, mt.tensor(target, device=where)) + h.sum() + c.sum() + g_h.sum()
        loss.backward()
        results[where] = [loss.numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in lstm.parameters()]
    for a, b in zip(results["cpu"], results[device]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_and_the_cells_on_the_device_match_the_cpu(nonlinearity, device):
    x, h0 = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((4, 2, 5))   # batch_first: B = 2, T = 4
    results = {}
    for where in ("cpu", device):
        mt.manual_seed(0)
        rnn = nn.RNN(3, 5, 2, nonlinearity, batch_first=True, bidirectional=True, dtype=np.float64).to(where)
        cell = nn.RNNCell(3, 5, nonlinearity=nonlinearity, dtype=np.float64).to(where)
        lstm_cell = nn.LSTMCell(3, 5, dtype=np.float64).to(where)
        gru_cell = nn.GRUCell(3, 5, dtype=np.float64).to(where)
        xt = mt.tensor(x, dtype=np.float64, device=where, requires_grad=True)
        out, h_n = rnn(xt, mt.tensor(h0, dtype=np.float64, device=where))
        h = cell(xt[:, 0], cell(xt[:, 1]))
        h_l, c_l = lstm_cell(xt[:, 1], (h, h))
        loss = (out * out).sum() + h_n.sum() + (h * h).sum() + (h_l * c_l).sum() + gru_cell(xt[:, 2], c_l).sum()
        loss.backward()
        assert out.device == where and xt.grad.device == where
        results[where] = [loss.numpy(), xt.grad.numpy()] + [p.grad.numpy() for m in (rnn, cell, lstm_cell, gru_cell)
                                                            for p in m.parameters()]
    for a, b in zip(results["cpu"], results[device]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
