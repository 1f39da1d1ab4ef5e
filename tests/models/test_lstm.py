"""The LSTM baselines: the fused LSTM cell (finite differences, agreement with the composed cell), the LSTM layer
against a NumPy reference and under padding, additive attention and its masking, both seq2seq models (shapes,
config, float64 gradients, padding, incremental decoding, greedy and beam search) and a tiny model that learns."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.functional as F
from minitorch import optim
from minitorch.fused import composed
from transformer import decoding
from transformer.additive_attention import AdditiveAttention
from transformer.lstm_config import LSTMConfig
from transformer.lstm_models import LSTMAttnSeq2Seq, LSTMSeq2Seq
from transformer.rnn import LSTM
from model_gradcheck import finite_difference_check

PAD, BOS, EOS = 0, 2, 3
V = 13
MODELS = [LSTMSeq2Seq, LSTMAttnSeq2Seq]
seeds = st.integers(0, 2**31 - 1)


def tiny(**kw):
    return LSTMConfig(**{**dict(vocab_size=V, d_embed=6, d_hidden=8, n_layers=2, dropout=0.0, max_len=32), **kw})


def make(kind, seed=0, float64=True, **kw):
    mt.manual_seed(seed)
    model = kind(tiny(**kw))
    if float64:
        for p in model.parameters():
            p.data = p.data.astype(np.float64)
    return model


def random_ids(rng, B, T, lengths=None):
    """(B, T) ids in [4, V) right-padded with PAD to the given lengths (default: no padding)."""
    ids = rng.integers(4, V, size=(B, T))
    if lengths is not None:
        ids[np.arange(T)[None, :] >= np.asarray(lengths)[:, None]] = PAD
    return ids


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ----- the fused cell -----
def cell_inputs(rng, N, H, scale=2.0):
    gates = mt.tensor(rng.standard_normal((N, 4 * H)) * scale, dtype=np.float64, requires_grad=True)
    c_prev = mt.tensor(rng.standard_normal((N, H)), dtype=np.float64, requires_grad=True)
    return gates, c_prev


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 4), H=st.integers(1, 4), seed=seeds)
def test_lstm_cell_gradcheck(N, H, seed):
    assert mt.gradcheck(lambda g, c: F.lstm_cell(g, c), cell_inputs(np.random.default_rng(seed), N, H))


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 4), H=st.integers(1, 4), seed=seeds)
def test_lstm_cell_with_padded_rows_gradcheck(N, H, seed):
    """With a mask the padded rows pass h_prev and c_prev on: gradients to all three against finite differences."""
    rng = np.random.default_rng(seed)
    keep = rng.random((N, 1)) < 0.5
    h_prev = mt.tensor(rng.standard_normal((N, H)), dtype=np.float64, requires_grad=True)
    assert mt.gradcheck(lambda g, c, h: F.lstm_cell(g, c, h, keep), (*cell_inputs(rng, N, H), h_prev))
    h, c = F.lstm_cell(*cell_inputs(rng, N, H), h_prev, keep)
    rows = ~keep[:, 0]
    assert np.array_equal(h.numpy()[rows], h_prev.numpy()[rows])


@settings(max_examples=20, deadline=None)
@given(N=st.integers(1, 4), H=st.integers(1, 4), seed=seeds)
def test_lstm_cell_matches_the_composed_cell_and_the_formulas(N, H, seed):
    rng = np.random.default_rng(seed)
    a, c0 = rng.standard_normal((N, 4 * H)) * 2, rng.standard_normal((N, H))
    wh, wc = rng.standard_normal((N, H)), rng.standard_normal((N, H))
    results = []
    for cell in (F.lstm_cell, composed.lstm_cell):
        gates, c_prev = (mt.tensor(x, dtype=np.float64, requires_grad=True) for x in (a, c0))
        h, c = cell(gates, c_prev)
        ((h * wh).sum() + (c * wc).sum()).backward()
        results.append([h.numpy(), c.numpy(), gates.grad.numpy(), c_prev.grad.numpy()])
    for fused, reference in zip(*results):
        np.testing.assert_allclose(fused, reference, rtol=0, atol=1e-10)
    i, f, g, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), np.tanh(a[:, 2 * H:3 * H]), sigmoid(a[:, 3 * H:])
    c = f * c0 + i * g
    np.testing.assert_allclose(results[0][1], c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][0], o * np.tanh(c), rtol=1e-12, atol=1e-12)


def test_lstm_cell_is_finite_for_saturated_float32_gates():
    gates = mt.tensor(np.array([[-200.0, 200.0, -300.0, 300.0], [200.0, -200.0, 300.0, -300.0]]), requires_grad=True)
    c_prev = mt.tensor(np.array([[1.0], [-1.0]]), requires_grad=True)
    h, c = F.lstm_cell(gates, c_prev)
    (h.sum() + c.sum()).backward()
    assert h.dtype == np.float32 and c.dtype == np.float32
    np.testing.assert_allclose(c.numpy(), [[1.0], [1.0]], atol=1e-6)  # keep c_prev / forget it and write g = 1
    assert all(np.all(np.isfinite(x)) for x in (h.numpy(), gates.grad.numpy(), c_prev.grad.numpy()))


def test_lstm_cell_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"gates \(2, 7\).*c_prev \(2, 2\)"):
        F.lstm_cell(mt.zeros(2, 7), mt.zeros(2, 2))


# ----- the LSTM layer -----
def reference_lstm(x, keep, layers, H):
    """NumPy LSTM over x (B, T, in) with padding carried through; layers: per layer a list of (W, b) per direction.
    Returns outputs (B, T, D H) and the final [(h, c)] per layer, directions concatenated."""
    B, T, _ = x.shape
    finals = []
    for directions in layers:
        outs, hs, cs = [], [], []
        for d, (W, b) in enumerate(directions):
            h, c, out = np.zeros((B, H)), np.zeros((B, H)), np.zeros((B, T, H))
            for t in (range(T - 1, -1, -1) if d == 1 else range(T)):
                z = np.concatenate([x[:, t], h], 1) @ W.T + b
                i, f = sigmoid(z[:, :H]), sigmoid(z[:, H:2 * H])
                g, o = np.tanh(z[:, 2 * H:3 * H]), sigmoid(z[:, 3 * H:])
                c_new = f * c + i * g
                h_new = o * np.tanh(c_new)
                real = keep[:, t:t + 1]
                h, c = np.where(real, h_new, h), np.where(real, c_new, c)
                out[:, t] = h
            outs.append(out), hs.append(h), cs.append(c)
        x = np.concatenate(outs, -1)
        finals.append((np.concatenate(hs, -1), np.concatenate(cs, -1)))
    return x, finals


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_matches_a_numpy_reference_with_padding(bidirectional):
    mt.manual_seed(0)
    H = 3
    lstm = LSTM(4, H, num_layers=2, bidirectional=bidirectional)
    for p in lstm.parameters():
        p.data = p.data.astype(np.float64)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4))
    keep = np.arange(5)[None, :] < np.array([5, 2, 0])[:, None]
    out, finals = lstm(mt.tensor(x, dtype=np.float64), keep=mt.tensor(keep))
    layers = [[(layer.weight.numpy(), layer.bias.numpy()) for layer in
               ([f, b] if bidirectional else [f])] for f, b in
              zip(lstm.forward_layers, lstm.backward_layers or lstm.forward_layers)]
    ref_out, ref_finals = reference_lstm(x, keep, layers, H)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-12)
    for (h, c), (rh, rc) in zip(finals, ref_finals):
        np.testing.assert_allclose(h.numpy(), rh, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.numpy(), rc, rtol=1e-12, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3), extra=st.integers(0, 3),
       bidirectional=st.booleans(), seed=seeds)
def test_padding_does_not_change_a_sentences_outputs_or_final_state(lengths, extra, bidirectional, seed):
    mt.manual_seed(seed % 1000)
    lstm = LSTM(3, 2, num_layers=2, bidirectional=bidirectional)
    for p in lstm.parameters():
        p.data = p.data.astype(np.float64)
    rng = np.random.default_rng(seed)
    S = max(lengths) + extra
    x = rng.standard_normal((len(lengths), S, 3))        # padded positions hold arbitrary vectors
    keep = np.arange(S)[None, :] < np.array(lengths)[:, None]
    out, finals = lstm(mt.tensor(x, dtype=np.float64), keep=mt.tensor(keep))
    for b, n in enumerate(lengths):
        alone_out, alone = lstm(mt.tensor(x[b:b + 1, :n], dtype=np.float64))
        np.testing.assert_allclose(out.numpy()[b, :n], alone_out.numpy()[0], rtol=1e-12, atol=1e-12)
        for (h, c), (ha, ca) in zip(finals, alone):
            np.testing.assert_allclose(h.numpy()[b], ha.numpy()[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(c.numpy()[b], ca.numpy()[0], rtol=1e-12, atol=1e-12)


def test_lstm_step_by_step_equals_the_whole_sequence():
    mt.manual_seed(0)
    lstm = LSTM(3, 4, num_layers=2)
    x = mt.randn(2, 5, 3)
    state = [(mt.randn(2, 4), mt.randn(2, 4)) for _ in range(2)]
    out, finals = lstm(x, state)
    for t in range(5):
        h, state = lstm.step(x[:, t], state)
        np.testing.assert_allclose(h.numpy(), out.numpy()[:, t], rtol=1e-5, atol=1e-6)
    for (h, c), (hf, cf) in zip(state, finals):
        np.testing.assert_allclose(h.numpy(), hf.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c.numpy(), cf.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="bidirectional"):
        LSTM(3, 4, bidirectional=True).step(x[:, 0], state)
    with pytest.raises(ValueError, match="bidirectional"):
        LSTM(3, 4, num_layers=2, bidirectional=True)(x, state)


# ----- additive attention -----
def attention_case(rng, B=3, S=5, d_query=4, d_memory=6, d_attn=5, lengths=(5, 2, 0)):
    mt.manual_seed(int(rng.integers(1000)))
    attn = AdditiveAttention(d_query, d_memory, d_attn)
    for p in attn.parameters():
        p.data = p.data.astype(np.float64)
    keep = np.arange(S)[None, :] < np.asarray(lengths)[:, None]
    return attn, rng.standard_normal((B, d_query)), rng.standard_normal((B, S, d_memory)), keep


def test_additive_attention_matches_the_formula():
    rng = np.random.default_rng(0)
    attn, s, h, keep = attention_case(rng)
    memory = mt.tensor(h, dtype=np.float64)
    context, weights = attn(mt.tensor(s, dtype=np.float64), attn.keys(memory), memory, mt.tensor(keep))
    Ws, Wh, v = attn.query_proj.weight.numpy(), attn.memory_proj.weight.numpy(), attn.v.numpy()
    scores = np.tanh((s @ Ws.T)[:, None, :] + h @ Wh.T) @ v
    for b in range(2):  # sentences with real positions: softmax over them, 0 elsewhere
        n = keep[b].sum()
        w = np.exp(scores[b, :n] - scores[b, :n].max())
        w /= w.sum()
        np.testing.assert_allclose(weights.numpy()[b, :n], w, rtol=1e-12)
        assert np.all(weights.numpy()[b, n:] == 0)
        np.testing.assert_allclose(context.numpy()[b], w @ h[b, :n], rtol=1e-12, atol=1e-12)
    assert np.all(weights.numpy()[2] == 0) and np.all(context.numpy()[2] == 0)  # an empty source attends nowhere


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_additive_attention_ignores_padded_positions(seed):
    """Other values at padded positions (memory and keys) change neither the context nor the weights, and get no
    gradient."""
    rng = np.random.default_rng(seed)
    attn, s, h, keep = attention_case(rng)
    h2 = np.where(keep[..., None], h, 100 * rng.standard_normal(h.shape))
    outputs, grads = [], []
    for memory_values in (h, h2):
        memory = mt.tensor(memory_values, dtype=np.float64, requires_grad=True)
        context, weights = attn(mt.tensor(s, dtype=np.float64), attn.keys(memory), memory, mt.tensor(keep))
        (context * mt.tensor(rng.standard_normal(context.shape), dtype=np.float64)).sum().backward()
        outputs.append((context.numpy(), weights.numpy()))
        grads.append(memory.grad.numpy())
    for a, b in zip(*outputs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    for g in grads:
        assert np.all(g[~keep] == 0)


# ----- the models -----
@pytest.mark.parametrize("field, value", [("vocab_size", 0), ("d_embed", 0), ("d_hidden", -2), ("n_layers", 0),
                                          ("dropout", 1.0), ("max_len", 2.5), ("pad_id", V),
                                          ("tie_embeddings", "yes")])
def test_config_rejects_impossible_sizes(field, value):
    with pytest.raises(ValueError, match=field):
        tiny(**{field: value}).validate()


def test_config_round_trips_and_the_attention_model_needs_an_even_d_hidden():
    cfg = tiny(d_hidden=10, tie_embeddings=False)
    assert LSTMConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown keys"):
        LSTMConfig.from_dict({**cfg.to_dict(), "d_model": 8})
    with pytest.raises(ValueError, match="d_hidden must be even"):
        LSTMAttnSeq2Seq(tiny(d_hidden=7))
    LSTMSeq2Seq(tiny(d_hidden=7))


def lstm_parameters(n_in, H):
    return 4 * H * (n_in + H) + 4 * H


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("tie", [True, False])
def test_shapes_and_parameter_counts(kind, tie):
    model = make(kind, float64=False, tie_embeddings=tie)
    rng = np.random.default_rng(0)
    src, tgt = random_ids(rng, 3, 5, [5, 2, 1]), random_ids(rng, 3, 4, [4, 4, 1])
    assert model(src, tgt).shape == (3, 4, V)
    E, H = 6, 8
    embeddings = V * E if tie else 2 * V * E + E * V
    if kind is LSTMSeq2Seq:
        rest = 2 * (lstm_parameters(E, H) + lstm_parameters(H, H)) + (H * E + E)
    else:
        encoder = 2 * (lstm_parameters(E, H // 2) + lstm_parameters(H, H // 2))
        decoder = lstm_parameters(E + H, H) + lstm_parameters(H, H)
        rest = encoder + decoder + (2 * H * H + H) + (2 * H * E + E)
    assert model.num_parameters() == embeddings + rest


def test_cross_attention_weights_for_plots():
    model = make(LSTMAttnSeq2Seq, float64=False, dropout=0.3)
    src, tgt = np.array([[5, 6, 7, EOS], [8, EOS, PAD, PAD]]), np.array([[BOS, 9, 10], [BOS, 11, PAD]])
    weights = model.cross_attention(src, tgt)
    assert model.training
    assert len(weights) == 1 and isinstance(weights[0], np.ndarray) and weights[0].shape == (2, 1, 3, 4)
    np.testing.assert_allclose(weights[0].sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(weights[0][1, :, :, 2:] == 0)


@pytest.mark.parametrize("kind", MODELS)
def test_bad_input_gives_clear_errors(kind):
    model = make(kind, float64=False, max_len=8)
    with pytest.raises(ValueError, match="src.*shape"):
        model(np.array([5, 6]), np.array([[2]]))
    with pytest.raises(ValueError, match=r"tgt_in.*\[0, 13\)"):
        model(np.array([[5, 6]]), np.array([[2, 13]]))
    with pytest.raises(ValueError, match="max_len"):
        model(np.full((1, 9), 5), np.array([[2]]))
    with pytest.raises(ValueError, match="2 sentences but src has 1"):
        model(np.array([[5]]), np.array([[2], [2]]))


@pytest.mark.parametrize("kind", MODELS)
def test_dropout_is_active_in_training_only_and_state_dict_restores(kind):
    a = make(kind, 0, float64=False, dropout=0.3)
    src, tgt = np.array([[5, 6, 7]]), np.array([[2, 8, 9]])
    assert not np.allclose(a(src, tgt).numpy(), a(src, tgt).numpy())
    a.eval()
    b = make(kind, 1, float64=False, dropout=0.3).eval()
    assert not np.allclose(a(src, tgt).numpy(), b(src, tgt).numpy())
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(src, tgt).numpy(), b(src, tgt).numpy())


@pytest.mark.parametrize("kind, tie", [(LSTMAttnSeq2Seq, True), (LSTMAttnSeq2Seq, False), (LSTMSeq2Seq, True)])
def test_gradients_of_a_whole_model_in_float64(kind, tie):
    model = make(kind, 0, d_embed=3, d_hidden=4, tie_embeddings=tie)
    rng = np.random.default_rng(4)
    src = random_ids(rng, 2, 4, lengths=[4, 2])
    tgt = random_ids(rng, 2, 4, lengths=[4, 2])
    tgt_in, tgt_out = np.concatenate([np.full((2, 1), BOS), tgt[:, :-1]], 1), tgt

    def loss_fn():
        return F.cross_entropy(model(src, tgt_in), tgt_out, ignore_index=PAD, label_smoothing=0.1)

    assert finite_difference_check(model, loss_fn, rng) >= 3 * len(list(model.parameters())) - 2


@pytest.mark.parametrize("kind", MODELS)
def test_source_padding_changes_nothing(kind):
    """A batch gives each sentence the logits it gets alone, with more padding, and with another pad embedding."""
    model = make(kind, 0).eval()
    rng = np.random.default_rng(2)
    src = random_ids(rng, 3, 5, [5, 3, 1])
    tgt = np.concatenate([np.full((3, 1), BOS), random_ids(rng, 3, 3)], 1)
    with mt.no_grad():
        logits = model(src, tgt).numpy()
        more_padding = model(np.concatenate([src, np.full((3, 4), PAD)], 1), tgt).numpy()
        alone = [model(src[b:b + 1, :n], tgt[b:b + 1]).numpy()[0] for b, n in enumerate([5, 3, 1])]
        model.src_embed.weight.data[PAD] = rng.standard_normal(6)   # padded source positions now read garbage
        garbage = model(src, tgt).numpy()
    np.testing.assert_allclose(more_padding, logits, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.stack(alone), logits, rtol=0, atol=1e-12)
    real_columns = [t for t in range(V) if t != PAD]   # tied: the pad row is also the pad token's output vector
    np.testing.assert_allclose(garbage[..., real_columns], logits[..., real_columns], rtol=0, atol=1e-12)


def test_attention_decoder_ignores_perturbed_padded_memory():
    model = make(LSTMAttnSeq2Seq, 0).eval()
    rng = np.random.default_rng(3)
    src = random_ids(rng, 3, 6, [6, 2, 4])
    pad = mt.tensor(src == PAD)
    with mt.no_grad():
        clean = model.start_decoding(src)
        noisy = dict(clean, memory=mt.where(pad.unsqueeze(-1), mt.tensor(rng.standard_normal((3, 6, 8)) * 10,
                                                                        dtype=np.float64), clean["memory"]),
                     keys=mt.where(pad.unsqueeze(-1), mt.tensor(rng.standard_normal((3, 6, 8)) * 10,
                                                                dtype=np.float64), clean["keys"]))
        assert not np.allclose(noisy["memory"].numpy(), clean["memory"].numpy())
        prev = np.full(3, BOS)
        for t in range(4):
            a, clean = model.decode_step(prev, clean)
            b, noisy = model.decode_step(prev, noisy)
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-12)
            prev = rng.integers(4, V, size=3)


@pytest.mark.parametrize("kind", MODELS)
def test_decode_step_gives_the_logits_of_the_full_forward_pass_and_reorders(kind):
    model = make(kind, 0).eval()
    rng = np.random.default_rng(5)
    src = random_ids(rng, 3, 5, [5, 2, 4])
    tgt_in = np.concatenate([np.full((3, 1), BOS), random_ids(rng, 3, 4)], 1)
    index = np.array([2, 0, 2, 1])
    with mt.no_grad():
        full = model(src, tgt_in).numpy()
        state = model.start_decoding(src)
        for t in range(5):
            logits, new_state = model.decode_step(tgt_in[:, t], state)
            np.testing.assert_allclose(logits.numpy(), full[:, t], rtol=1e-10, atol=1e-12)
            reordered, _ = model.decode_step(tgt_in[index, t], model.reorder_state(state, index))
            np.testing.assert_allclose(reordered.numpy(), full[index, t], rtol=1e-10, atol=1e-12)
            state = new_state


# ----- decoding with transformer.decoding -----
def reference_greedy(model, src, max_len_a=1.5, max_len_b=10):
    """Greedy search recomputing the full forward pass for each sentence alone at each step."""
    out = []
    with mt.no_grad():
        for row in src:
            src_row, ys = [int(t) for t in row if t != PAD], []
            while len(ys) < int(max_len_a * len(src_row) + max_len_b):
                logits = model(np.array([src_row]), np.array([[BOS] + ys]))[0, -1].numpy()
                logits[[PAD, BOS]] = -np.inf
                token = int(np.argmax(logits))
                if token == EOS:
                    break
                ys.append(token)
            out.append(ys)
    return out


@pytest.mark.parametrize("kind", MODELS)
def test_greedy_and_beam_search_decode_both_models(kind):
    model = make(kind, 0, dropout=0.1)   # float64: no near-ties that rounding could decide differently
    for p in model.parameters():  # larger weights than at initialisation: peaked, varied next-token choices
        p.data *= 3
    src = random_ids(np.random.default_rng(6), 4, 5, [5, 3, 1, 4])
    greedy = decoding.greedy_decode(model, src)
    assert model.training  # the mode is restored
    model.eval()
    assert greedy == reference_greedy(model, src)
    assert decoding.beam_search(model, src, beam_size=1) == greedy
    beams = decoding.beam_search(model, src, beam_size=3)
    assert len(beams) == 4
    assert all(t not in (PAD, BOS, EOS) and 0 <= t < V for ys in beams for t in ys)
    assert all(len(ys) <= int(1.5 * n + 10) for ys, n in zip(beams, [5, 3, 1, 4]))


PAIRS = [([4, 5, 6, 7], [8, 9, 10]), ([6, 4, 11], [12, 8, 9, 9, 5]), ([7, 7, 5, 4, 9], [11, 4]),
         ([10, 12], [6, 5, 7, 8])]


def padded(rows):
    out = np.full((len(rows), max(len(r) for r in rows)), PAD)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", MODELS)
def test_a_tiny_model_overfits_four_pairs(kind):
    mt.manual_seed(0)
    model = kind(LSTMConfig(vocab_size=V, d_embed=16, d_hidden=32, n_layers=2, dropout=0.0, max_len=16))
    src = padded([s + [EOS] for s, _ in PAIRS])
    tgt_in, tgt_out = padded([[BOS] + t for _, t in PAIRS]), padded([t + [EOS] for _, t in PAIRS])
    opt = optim.Adam(model.parameters(), lr=1e-2)
    for step in range(150):
        loss = F.cross_entropy(model(src, tgt_in), tgt_out, ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert decoding.greedy_decode(model, src) == [t for _, t in PAIRS]
    assert decoding.beam_search(model, src, beam_size=4) == [t for _, t in PAIRS]


@pytest.mark.parametrize("kind", MODELS)
def test_train_step_and_decoding_on_each_device(kind, device):
    model = make(kind, 0, float64=False, dropout=0.1).to(device)
    src = random_ids(np.random.default_rng(7), 2, 4, [4, 2])
    tgt_in, tgt_out = np.array([[BOS, 5, 6], [BOS, 7, PAD]]), np.array([[5, 6, EOS], [7, EOS, PAD]])
    loss = F.cross_entropy(model(mt.tensor(src, device=device), mt.tensor(tgt_in, device=device)),
                           mt.tensor(tgt_out, device=device), ignore_index=PAD)
    loss.backward()
    assert np.isfinite(loss.item()) and all(p.grad is not None for p in model.parameters())
    assert len(decoding.beam_search(model, mt.tensor(src, device=device), beam_size=2)) == 2
