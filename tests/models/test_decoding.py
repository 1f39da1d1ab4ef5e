"""Incremental decoding: the key/value cache gives the logits of a full forward pass, greedy and beam search agree
with decoding that recomputes everything, beam size 1 is greedy, and a wide beam finds the best hypothesis."""
import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch as mt
import minitorch.functional as F
from minitorch import optim
from transformer import ModelConfig, Transformer, beam_search, greedy_decode
from transformer.inference import inference

PAD, UNK, BOS, EOS = 0, 1, 2, 3
V = 11


def tiny(**kw):
    base = dict(vocab_size=V, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1,
                max_len=40)
    return ModelConfig(**{**base, **kw})


def make(seed, **kw):
    """A freshly initialised model."""
    mt.manual_seed(seed)
    return Transformer(tiny(**kw))


def padded(rows, width):
    out = np.full((len(rows), width), PAD)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


@functools.lru_cache(maxsize=None)
def half_trained(norm="pre"):
    """A model after 80 Adam steps on reversing random sequences: unlike a fresh one, which repeats one token, its
    outputs differ between sentences and steps.
    Shared between tests: do not change it."""
    mt.manual_seed(0)
    cfg = tiny(d_model=16, n_heads=2, d_ff=32, norm=norm)
    model = Transformer(cfg)
    rng, opt = np.random.default_rng(0), optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(80):
        rows = [unpadded(r) for r in random_batch(rng, 16, 5)]
        logits = model(padded(rows, 5), padded([[BOS] + r[::-1] for r in rows], 6))
        targets = padded([r[::-1] + [EOS] for r in rows], 6)
        loss = F.cross_entropy(logits, targets, ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def random_batch(rng, B, S, min_len=1):
    """(B, S) ids in [4, V), right-padded to random lengths >= min_len."""
    lengths = rng.integers(min_len, S + 1, size=B)
    ids = rng.integers(4, V, size=(B, S))
    ids[np.arange(S)[None, :] >= lengths[:, None]] = PAD
    return ids


def unpadded(row):
    return [int(t) for t in row if t != PAD]


def full_forward_logits(model, src_row, ys):
    """Next-token logits after bos + ys, recomputed from scratch for one sentence (no cache, no batching)."""
    with inference(model):
        return model(np.array([src_row]), np.array([[BOS] + ys]))[0, -1].numpy().astype(np.float64)


def reference_greedy(model, src, max_len_a=1.5, max_len_b=10):
    out = []
    for row in src:
        src_row, ys = unpadded(row), []
        while len(ys) < int(max_len_a * len(src_row) + max_len_b):
            logits = full_forward_logits(model, src_row, ys)
            logits[[PAD, BOS]] = -np.inf
            token = int(np.argmax(logits))
            if token == EOS:
                break
            ys.append(token)
        out.append(ys)
    return out


# ----- the cache -----
@pytest.mark.parametrize("kw", [{}, dict(norm="post", positions="learned"), dict(tie_embeddings=False)])
def test_decode_step_gives_the_logits_of_a_full_forward_pass(kw):
    model = make(0, **kw).eval()
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    rng = np.random.default_rng(0)
    src = random_batch(rng, 3, 5)
    ys = rng.integers(4, V, size=(3, 6))
    with mt.no_grad():
        state = model.start_decoding(src)
        prev = np.full(3, BOS)
        for t in range(6):
            logits, new_state = model.decode_step(prev, state)
            again, _ = model.decode_step(prev, state)  # the caller's state is left as it was
            np.testing.assert_array_equal(again.numpy(), logits.numpy())
            for i in range(3):
                expected = full_forward_logits(model, unpadded(src[i]), list(ys[i, :t]))
                np.testing.assert_allclose(logits.numpy()[i], expected, rtol=1e-10, atol=1e-10)
            state, prev = new_state, ys[:, t]


def test_reorder_state_picks_and_repeats_rows():
    model = make(1).eval()
    src = random_batch(np.random.default_rng(1), 3, 4)
    with mt.no_grad():
        state = model.start_decoding(src)
        logits, state = model.decode_step(np.full(3, BOS), state)
        prev = np.array([5, 6, 7])
        expected, _ = model.decode_step(prev, state)
        index = np.array([2, 0, 2, 1])
        reordered, _ = model.decode_step(prev[index], model.reorder_state(state, index))
    np.testing.assert_allclose(reordered.numpy(), expected.numpy()[index], rtol=1e-5, atol=1e-6)


# ----- greedy -----
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_cached_batched_greedy_equals_recomputing_each_sentence(seed):
    model = half_trained(["pre", "post"][seed % 2])
    src = random_batch(np.random.default_rng(seed), 4, 5, min_len=1)
    out = greedy_decode(model, src)
    assert model.training  # the mode is restored
    assert out == reference_greedy(model, src)
    assert all(t not in (PAD, BOS, EOS) for ys in out for t in ys)


def test_greedy_respects_the_length_limit():
    model = half_trained()
    src = np.array([[4, 5, 6, 7], [4, 5, PAD, PAD], [PAD, PAD, PAD, PAD]])
    out = greedy_decode(model, src, max_len_a=1.0, max_len_b=1)
    assert [len(ys) <= n for ys, n in zip(out, [5, 3, 1])] == [True] * 3
    assert out[:2] == reference_greedy(model, src[:2], 1.0, 1)
    assert greedy_decode(model, src, max_len_a=0.0, max_len_b=0) == [[], [], []]


# ----- beam search -----
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.0, 0.6, 1.0]))
def test_beam_size_one_is_greedy(seed, alpha):
    model = half_trained()
    src = random_batch(np.random.default_rng(seed), 5, 6)
    assert beam_search(model, src, beam_size=1, length_penalty=alpha) == greedy_decode(model, src)


def test_batched_beam_search_equals_one_sentence_at_a_time():
    model = half_trained("post")
    src = random_batch(np.random.default_rng(5), 4, 6)
    batched = beam_search(model, src, beam_size=3)
    alone = [beam_search(model, np.array([unpadded(row)]), beam_size=3)[0] for row in src]
    assert batched == alone
    assert all(t not in (PAD, BOS, EOS) for ys in batched for t in ys)


def log_prob(model, src_row, ys, ends):
    """log p(ys, then eos if ends | src) for one sentence, from one full forward pass."""
    with inference(model):
        logits = model(np.array([src_row]), np.array([[BOS] + list(ys)]))[0]
        log_p = F.log_softmax(logits.double(), dim=-1).numpy()
    return sum(log_p[i, t] for i, t in enumerate(list(ys) + [EOS] * ends))


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_a_beam_wider_than_the_search_space_finds_the_best_output(alpha):
    """With 8 tokens allowed besides eos and at most 2 output tokens, 64 beams never drop a hypothesis, so beam
    search must return the best of all outputs by log p(Y) / lp(Y), |Y| counting the eos of those that have one."""
    model = half_trained()
    src = random_batch(np.random.default_rng(7), 3, 3)
    out = beam_search(model, src, beam_size=64, length_penalty=alpha, max_len_a=0.0, max_len_b=2)
    allowed = [t for t in range(V) if t not in (PAD, BOS, EOS)]
    for row, ys in zip(src, out):
        scores = {}
        for n in range(3):
            for y in itertools.product(allowed, repeat=n):
                ends = n < 2  # shorter outputs end with eos; the longest are cut at the limit
                scores[y] = log_prob(model, unpadded(row), y, ends) / ((5 + n + ends) / 6) ** alpha
        assert tuple(ys) == max(scores, key=scores.get)


def test_beam_search_never_scores_below_greedy():
    """Without length penalty, a beam of 4 keeps greedy's hypothesis unless it finds a more likely one."""
    model = half_trained()
    src = random_batch(np.random.default_rng(9), 6, 4)
    beams = beam_search(model, src, beam_size=4, length_penalty=0.0, max_len_a=0.0, max_len_b=3)
    greedy = greedy_decode(model, src, max_len_a=0.0, max_len_b=3)
    for row, b, g in zip(src, beams, greedy):
        assert log_prob(model, unpadded(row), b, len(b) < 3) >= log_prob(model, unpadded(row), g, len(g) < 3) - 1e-9


class MarkovModel:
    """A stand-in model for the decoding functions: next-token logits = table[previous token] + bias[first source
    token]. Its probabilities are known in closed form, so the best output can be found by enumeration."""

    def __init__(self, table, bias):
        self.table, self.bias, self.training = table, bias, True

    def eval(self):
        return self.train(False)

    def train(self, mode=True):
        self.training = mode
        return self

    def start_decoding(self, src):
        return {"first": np.asarray(src)[:, 0]}

    def decode_step(self, prev, state):
        return mt.tensor(self.table[prev] + self.bias[state["first"]]), state

    def reorder_state(self, state, index):
        return {"first": state["first"][index]}

    def log_prob(self, first, ys, ends):
        logits = self.table[[BOS] + list(ys)] + self.bias[first]
        log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return sum(log_p[i, t] for i, t in enumerate(list(ys) + [EOS] * ends))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.0, 0.6, 1.0, 2.0]))
def test_wide_beam_search_finds_the_best_output_of_a_markov_model(seed, alpha):
    rng = np.random.default_rng(seed)
    model = MarkovModel(2 * rng.standard_normal((7, 7)), rng.standard_normal((7, 7)))
    src = np.array([[4], [5], [6]])
    out = beam_search(model, src, beam_size=64, length_penalty=alpha, max_len_a=0.0, max_len_b=3)
    allowed = [1, 4, 5, 6]
    for first, ys in zip(src[:, 0], out):
        scores = {y: model.log_prob(first, y, n < 3) / ((5 + n + (n < 3)) / 6) ** alpha
                  for n in range(4) for y in itertools.product(allowed, repeat=n)}
        assert tuple(ys) == max(scores, key=scores.get)


def test_length_penalty_counts_the_eos():
    """[] scores log p = -1.0 with |Y| = 1 (the eos), [5] scores -1.4 with |Y| = 2. GNMT's lp: ((5 + |Y|) / 6)^alpha.
    alpha = 2: -1.0 / 1 > -1.4 / (7/6)^2 = -1.029, so [] wins; alpha = 3: -1.4 / (7/6)^3 = -0.882 wins."""
    p = np.full((7, 7), 1 / 7)
    p[BOS] = [0.032 / 5] * 7
    p[BOS, EOS], p[BOS, 5] = np.exp(-1.0), 0.6
    p[5] = [(1 - np.exp(-1.4) / 0.6) / 6] * 7
    p[5, EOS] = np.exp(-1.4) / 0.6
    model = MarkovModel(np.log(p), np.zeros((7, 7)))
    src = np.array([[4]])
    assert beam_search(model, src, beam_size=4, length_penalty=2.0, max_len_a=0, max_len_b=2) == [[]]
    assert beam_search(model, src, beam_size=4, length_penalty=3.0, max_len_a=0, max_len_b=2) == [[5]]


def test_pad_and_bos_are_never_produced():
    table = np.zeros((7, 7))
    table[:, PAD], table[:, BOS], table[:, 5], table[5, EOS] = 9.0, 8.0, 1.0, 20.0   # pad, bos, then 5 is likeliest
    model = MarkovModel(table, np.zeros((7, 7)))
    src = np.array([[4, 4], [6, PAD]])
    assert greedy_decode(model, src) == [[5], [5]]
    assert beam_search(model, src, beam_size=3) == [[5], [5]]
    assert model.training


def test_beam_search_rejects_a_bad_beam_size():
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(make(0), np.array([[4, 5]]), beam_size=0)
