"""The Transformer models: config checks, shapes through every module, masks, a float64 gradient check of whole
1-layer models, parameter counts, and a tiny model that learns a few sentence pairs by heart."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.functional as F
from minitorch import optim
from transformer import ModelConfig, Transformer, greedy_decode
from transformer.attention import MultiHeadAttention
from transformer.layers import (DecoderLayer, EncoderLayer, FeedForward, PositionalEncoding, Residual,
                                sinusoidal_table)
from transformer.masks import causal_mask, padding_mask
from transformer.model import Decoder, Encoder
from model_gradcheck import finite_difference_check

PAD, BOS, EOS = 0, 2, 3


def tiny(**kw):
    base = dict(vocab_size=13, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0,
                max_len=32)
    return ModelConfig(**{**base, **kw})


def random_ids(rng, B, T, vocab, lengths=None):
    """(B, T) ids in [4, vocab) right-padded with PAD to the given lengths (default: no padding)."""
    ids = rng.integers(4, vocab, size=(B, T))
    if lengths is not None:
        ids[np.arange(T)[None, :] >= np.asarray(lengths)[:, None]] = PAD
    return ids


def as_float64(model):
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    return model


# ----- config -----
@pytest.mark.parametrize("field, value, words", [
    ("d_model", 10, "divisible by n_heads"), ("n_heads", 0, "n_heads"), ("d_ff", -1, "d_ff"),
    ("vocab_size", 0, "vocab_size"), ("dropout", 1.0, "dropout"), ("norm", "middle", "norm"),
    ("positions", "rotary", "positions"), ("pad_id", 13, "pad_id"), ("n_decoder_layers", 0, "n_decoder_layers"),
    ("max_len", 2.5, "max_len")])
def test_config_rejects_impossible_sizes(field, value, words):
    cfg = tiny(d_model=8, n_heads=4)
    setattr(cfg, field, value)
    with pytest.raises(ValueError, match=words):
        cfg.validate()
    with pytest.raises(ValueError, match=words):
        Transformer(cfg)


def test_config_round_trips_through_a_dict():
    cfg = tiny(norm="post", positions="learned", tie_embeddings=False)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown keys.*'d_modle'"):
        ModelConfig.from_dict({**cfg.to_dict(), "d_modle": 8})


# ----- shapes -----
@settings(max_examples=8, deadline=None)
@given(B=st.integers(1, 3), S=st.integers(1, 6), T=st.integers(1, 6), norm=st.sampled_from(["pre", "post"]),
       positions=st.sampled_from(["sinusoidal", "learned"]), tie=st.booleans())
def test_shapes_through_every_module(B, S, T, norm, positions, tie):
    cfg = tiny(norm=norm, positions=positions, tie_embeddings=tie)
    d, rng = cfg.d_model, np.random.default_rng(0)
    x, memory = mt.randn(B, T, d), mt.randn(B, S, d)
    src = random_ids(rng, B, S, cfg.vocab_size)
    tgt = random_ids(rng, B, T, cfg.vocab_size)
    src_mask, tgt_mask = padding_mask(src, PAD), causal_mask(T)
    assert src_mask.shape == (B, 1, 1, S) and tgt_mask.shape == (1, 1, T, T)

    assert MultiHeadAttention(d, 2)(x, tgt_mask).shape == (B, T, d)
    cross = MultiHeadAttention(d, 2, cross=True)
    k, v = cross.memory_kv(memory)
    assert k.shape == v.shape == (B, 2, S, d // 2)
    assert cross(x, src_mask, kv=(k, v)).shape == (B, T, d)
    assert FeedForward(d, cfg.d_ff)(x).shape == (B, T, d)
    assert PositionalEncoding(d, cfg.max_len, 0.0, positions == "learned")(x).shape == (B, T, d)
    assert EncoderLayer(cfg)(memory, src_mask).shape == (B, S, d)
    assert DecoderLayer(cfg)(x, tgt_mask, cross.memory_kv(memory), src_mask).shape == (B, T, d)
    assert DecoderLayer(cfg, cross=False)(x, tgt_mask).shape == (B, T, d)
    assert Encoder(cfg)(memory, src_mask).shape == (B, S, d)
    assert Decoder(cfg)(x, tgt_mask, memory, src_mask).shape == (B, T, d)
    assert Transformer(cfg)(src, tgt).shape == (B, T, cfg.vocab_size)


def test_sinusoids_follow_the_paper_formula():
    table = sinusoidal_table(50, 6)
    for pos in (0, 1, 7, 49):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert table[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_embeddings_are_scaled_by_sqrt_d_model_and_positions_added():
    model = Transformer(tiny(d_model=8)).eval()
    ids = np.array([[5, 6, 7]])
    x = model.src_pos(model.src_embed(ids)).numpy()
    expected = model.src_embed.weight.numpy()[ids[0]] * math.sqrt(8) + sinusoidal_table(32, 8)[:3]
    np.testing.assert_allclose(x[0], expected, rtol=1e-5, atol=1e-6)


def numpy_layer_norm(x, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


def numpy_attention(x, memory, W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o, n_heads, mask):
    """Multi-head attention as the paper writes it, one head at a time."""
    d_k = W_q.shape[0] // n_heads
    Q, K, V = x @ W_q.T + b_q, memory @ W_k.T + b_k, memory @ W_v.T + b_v
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        scores = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) / np.sqrt(d_k)
        scores = np.where(mask, scores, -np.inf)
        w = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append((w / w.sum(-1, keepdims=True)) @ V[..., cols])
    return np.concatenate(heads, axis=-1) @ W_o.T + b_o


def test_self_and_cross_attention_match_the_formula_head_by_head():
    rng = np.random.default_rng(5)
    B, T, S, d, h = 2, 3, 4, 12, 3
    x, memory = rng.standard_normal((B, T, d)), rng.standard_normal((B, S, d))
    mask = rng.random((B, 1, T, S)) < 0.7
    mask[..., 0] = True
    self_attn, cross_attn = MultiHeadAttention(d, h), MultiHeadAttention(d, h, cross=True)
    for m in (self_attn, cross_attn):
        for p in m.parameters():  # the biases start at zero; make them count
            p.data[...] = rng.standard_normal(p.shape)
    W, b = self_attn.w_qkv.weight.numpy(), self_attn.w_qkv.bias.numpy()
    causal = np.tril(np.ones((T, T), dtype=bool))
    expected = numpy_attention(x, x, W[:d], b[:d], W[d:2 * d], b[d:2 * d], W[2 * d:], b[2 * d:],
                               self_attn.w_o.weight.numpy(), self_attn.w_o.bias.numpy(), h, causal)
    got = self_attn(mt.tensor(x), causal[None, None]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    W, b = cross_attn.w_kv.weight.numpy(), cross_attn.w_kv.bias.numpy()
    expected = numpy_attention(x, memory, cross_attn.w_q.weight.numpy(), cross_attn.w_q.bias.numpy(),
                               W[:d], b[:d], W[d:], b[d:], cross_attn.w_o.weight.numpy(),
                               cross_attn.w_o.bias.numpy(), h, mask[:, 0])
    got = cross_attn(mt.tensor(x), mask, kv=cross_attn.memory_kv(mt.tensor(memory))).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_residual_connections_and_feed_forward_match_the_formulas(norm):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 8))
    ffn = FeedForward(8, 16)
    for p in ffn.parameters():
        p.data[...] = rng.standard_normal(p.shape)
    W1, b1, W2, b2 = (t.numpy() for t in (ffn.w_1.weight, ffn.w_1.bias, ffn.w_2.weight, ffn.w_2.bias))
    expected_ffn = np.maximum(x @ W1.T + b1, 0) @ W2.T + b2
    np.testing.assert_allclose(ffn(mt.tensor(x)).numpy(), expected_ffn, rtol=1e-4, atol=1e-4)
    layer = Residual(8, 0.0, norm)
    got = layer(mt.tensor(x), ffn).numpy()
    if norm == "pre":
        expected = x + np.maximum(numpy_layer_norm(x) @ W1.T + b1, 0) @ W2.T + b2
    else:
        expected = numpy_layer_norm(x + expected_ffn)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


# ----- masks: what a position must not see cannot change its output -----
def test_attention_ignores_masked_keys_and_values():
    rng = np.random.default_rng(1)
    B, T, S, d = 2, 3, 5, 8
    x, memory = mt.randn(B, T, d), rng.standard_normal((B, S, d)).astype(np.float32)
    src = np.array([[4, 5, 6, PAD, PAD], [4, 5, 6, 7, PAD]])
    attn = MultiHeadAttention(d, 2, cross=True)
    before = attn(x, padding_mask(src, PAD), kv=attn.memory_kv(mt.tensor(memory))).numpy()
    memory[src == PAD] = 100 * rng.standard_normal(((src == PAD).sum(), d))
    after = attn(x, padding_mask(src, PAD), kv=attn.memory_kv(mt.tensor(memory))).numpy()
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
    assert not np.allclose(attn(x, None, kv=attn.memory_kv(mt.tensor(memory))).numpy(), before)  # it would see them


@pytest.mark.parametrize("norm, positions", [("pre", "sinusoidal"), ("post", "learned")])
def test_no_position_attends_to_source_padding(norm, positions):
    """Each sentence alone, and in a batch padded to a longer length, gets the same logits."""
    mt.manual_seed(0)
    model = Transformer(tiny(norm=norm, positions=positions)).eval()
    rng = np.random.default_rng(2)
    src = random_ids(rng, 3, 7, 13, lengths=[7, 4, 2])
    tgt = random_ids(rng, 3, 5, 13, lengths=[5, 3, 5])
    batched = model(src, tgt).numpy()
    for i, (n, m) in enumerate([(7, 5), (4, 3), (2, 5)]):
        alone = model(src[i:i + 1, :n], tgt[i:i + 1, :m]).numpy()
        np.testing.assert_allclose(batched[i, :m], alone[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make", [lambda: Transformer(tiny()), lambda: Transformer(tiny(norm="post")),
                                  lambda: Transformer(tiny(positions="learned"))])
def test_no_position_attends_to_the_future(make):
    mt.manual_seed(0)
    model = make().eval()
    rng = np.random.default_rng(3)
    src, tgt = random_ids(rng, 2, 4, 13), random_ids(rng, 2, 6, 13)
    before = model(src, tgt).numpy()
    for t in range(5):
        changed = tgt.copy()
        changed[:, t + 1:] = random_ids(rng, 2, 5 - t, 13)
        changed[:, t + 1] = np.where(changed[:, t + 1] == tgt[:, t + 1], 4 + (tgt[:, t + 1] - 3) % 9, changed[:, t + 1])
        after = model(src, changed).numpy()
        np.testing.assert_allclose(after[:, :t + 1], before[:, :t + 1], rtol=1e-5, atol=1e-6)
        assert not np.allclose(after[:, t + 1], before[:, t + 1])  # the changed position itself does change


def test_target_padding_is_masked_too():
    """Padding in the middle of a sequence (not made by right-padding) is not attended to either."""
    mt.manual_seed(0)
    model = Transformer(tiny(positions="learned")).eval()
    model.tgt_pos.table.data[...] = 0  # positions carrying no information: dropping the pad changes nothing else
    src = np.array([[5, 9, 4]])
    with_pad, without = model(src, np.array([[5, 6, PAD, 7, 8]])).numpy(), model(src, np.array([[5, 6, 7, 8]])).numpy()
    np.testing.assert_allclose(with_pad[0, [0, 1, 3, 4]], without[0], rtol=1e-5, atol=1e-6)


# ----- structure -----
def expected_parameters(V, d, f, n_enc, n_dec, tied, norm="pre", learned_positions=0):
    """Counted from the paper's architecture: attention has W_Q, W_K, W_V, W_O (d x d, with biases)."""
    attention, ffn, ln = 4 * d * d + 4 * d, 2 * d * f + f + d, 2 * d
    encoder = n_enc * (attention + ffn + 2 * ln) + (ln if norm == "pre" else 0)
    decoder = n_dec * (2 * attention + ffn + 3 * ln) + (ln if norm == "pre" else 0)
    embeddings = V * d if tied else 3 * V * d  # untied: source, target and output matrices
    return encoder + decoder + embeddings + 2 * learned_positions * d


@pytest.mark.parametrize("tied, norm, positions", [(True, "pre", "sinusoidal"), (False, "post", "learned")])
def test_parameter_count_matches_the_architecture(tied, norm, positions):
    cfg = tiny(tie_embeddings=tied, norm=norm, positions=positions)
    expected = expected_parameters(13, 8, 16, 2, 2, tied, norm, cfg.max_len if positions == "learned" else 0)
    assert Transformer(cfg).num_parameters() == expected
    names = [n for n, _ in Transformer(cfg).named_parameters()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("tie", [True, False])
def test_tied_output_projection_is_the_embedding(tie):
    """Changing the embedding of a token that is not in the input changes that token's logit only, and only when
    the output projection is tied to the embedding."""
    mt.manual_seed(0)
    model = Transformer(tiny(tie_embeddings=tie)).eval()
    src, tgt = np.array([[5, 6, 3]]), np.array([[2, 7]])
    before = model(src, tgt).numpy()
    model.src_embed.weight.data[12] += np.random.default_rng(0).standard_normal(8)
    after = model(src, tgt).numpy()
    np.testing.assert_allclose(after[..., :12], before[..., :12], rtol=1e-5, atol=1e-6)
    assert (model.tgt_embed is model.src_embed) == tie
    assert np.all(np.abs(after[..., 12] - before[..., 12]) > 1e-3) == tie


@pytest.mark.parametrize("field", ["dropout", "attention_dropout", "activation_dropout"])
def test_dropout_is_active_in_training_only(field):
    mt.manual_seed(0)
    model = Transformer(tiny(**{field: 0.3}))
    src, tgt = np.array([[5, 6, 7]]), np.array([[2, 8, 9]])
    assert not np.allclose(model(src, tgt).numpy(), model(src, tgt).numpy())
    model.eval()
    np.testing.assert_array_equal(model(src, tgt).numpy(), model(src, tgt).numpy())


def test_cross_attention_weights_for_plots():
    mt.manual_seed(0)
    model = Transformer(tiny())
    src, tgt = np.array([[5, 6, 7, 3], [8, 3, PAD, PAD]]), np.array([[2, 9, 10], [2, 11, PAD]])
    weights = model.cross_attention(src, tgt)
    assert model.training
    assert len(weights) == 2 and all(isinstance(w, np.ndarray) and w.shape == (2, 2, 3, 4) for w in weights)
    for w in weights:
        np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-5)
        assert np.all(w[1, :, :, 2:] == 0)


def test_bad_input_gives_clear_errors():
    model = Transformer(tiny(max_len=8))
    with pytest.raises(ValueError, match="src.*shape"):
        model(np.array([5, 6]), np.array([[2]]))
    with pytest.raises(ValueError, match=r"tgt_in.*\[0, 13\)"):
        model(np.array([[5, 6]]), np.array([[2, 13]]))
    with pytest.raises(TypeError, match="src.*integers"):
        model(np.array([[5.0, 6.0]]), np.array([[2]]))
    with pytest.raises(ValueError, match="max_len"):
        model(np.full((1, 9), 5), np.array([[2]]))
    with pytest.raises(ValueError, match="2 sentences but src has 1"):
        model(np.array([[5]]), np.array([[2], [2]]))


def test_state_dict_restores_the_model():
    mt.manual_seed(0)
    a = Transformer(tiny(tie_embeddings=False, positions="learned")).eval()
    mt.manual_seed(1)
    b = Transformer(tiny(tie_embeddings=False, positions="learned")).eval()
    src, tgt = np.array([[5, 6, 7]]), np.array([[2, 8]])
    assert not np.allclose(a(src, tgt).numpy(), b(src, tgt).numpy())
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(src, tgt).numpy(), b(src, tgt).numpy())


# ----- gradients: every parameter of a whole 1-layer model against central differences in float64 -----
@pytest.mark.parametrize("norm, positions, tie", [("pre", "sinusoidal", True), ("post", "learned", False),
                                                  ("pre", "learned", True)])
def test_gradients_of_a_one_layer_model_in_float64(norm, positions, tie):
    mt.manual_seed(0)
    cfg = tiny(n_encoder_layers=1, n_decoder_layers=1, norm=norm, positions=positions, tie_embeddings=tie)
    model = as_float64(Transformer(cfg))
    for p in model.parameters():  # LayerNorm weights and biases start at 1 and 0; make them generic
        if p.ndim == 1:
            p.data += 0.1 * np.random.default_rng(p.numel()).standard_normal(p.shape)
    rng = np.random.default_rng(4)
    src = random_ids(rng, 2, 5, 13, lengths=[5, 3])
    tgt = random_ids(rng, 2, 4, 13, lengths=[4, 2])
    tgt_in, tgt_out = np.concatenate([np.full((2, 1), BOS), tgt[:, :-1]], 1), tgt

    def loss_fn():
        logits = model(src, tgt_in)
        return F.cross_entropy(logits, tgt_out, ignore_index=PAD, label_smoothing=0.1)

    assert finite_difference_check(model, loss_fn, rng, per_parameter=4) > 40


# ----- learning: a tiny Transformer learns four pairs by heart -----
PAIRS = [([4, 5, 6, 7], [8, 9, 10]), ([6, 4, 11], [12, 8, 9, 9, 5]), ([7, 7, 5, 4, 9], [11, 4]),
         ([10, 12], [6, 5, 7, 8])]


def padded(rows):
    out = np.full((len(rows), max(len(r) for r in rows)), PAD)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def test_a_tiny_transformer_overfits_four_pairs():
    mt.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=13, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1,
                                    n_decoder_layers=1, dropout=0.0, max_len=16))
    src = padded([s + [EOS] for s, _ in PAIRS])
    tgt_in, tgt_out = padded([[BOS] + t for _, t in PAIRS]), padded([t + [EOS] for _, t in PAIRS])
    opt = optim.Adam(model.parameters(), lr=3e-3)
    for step in range(200):
        loss = F.cross_entropy(model(src, tgt_in), tgt_out, ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert greedy_decode(model, src) == [t for _, t in PAIRS]
