"""Turning a model into output sentences one token at a time: greedy search and beam search, batched over sentences.

Both use only the incremental-decoding interface, so any model that has it can be decoded:
    state = model.start_decoding(src)             encode the batch once
    logits, state = model.decode_step(prev, state)  prev (B,) -> next-token logits (B, vocab)
    state = model.reorder_state(state, index)     keep / repeat rows: finished sentences leave, beams are reordered
A model may also have decode_log_probs(prev, state) -> (log-probabilities (B, vocab), state), which the decoders then
use instead of decode_step's logits: an Ensemble (several models decoded as one, fairseq's `--path a:b`) has it.
Both run in eval mode under no_grad, never produce pad or bos, and stop a sentence at eos or after
max_len_a * (its source length without padding) + max_len_b tokens. They return token ids without bos/eos/pad.
"""
from types import SimpleNamespace

import numpy as np

import minitorch.functional as F
from minitorch import Tensor, backend

from .inference import inference
from .vocabulary import BOS_ID, EOS_ID, MAX_LEN_A, MAX_LEN_B, PAD_ID


class Ensemble:
    """Several models decoded as one: each step's next-token log-probabilities are the mean of the members'
    log-softmax, log p(y) = (1/M) sum_m log p_m(y), so a hypothesis' score is the mean of the members' log p(Y).

    Each member keeps its own incremental state (its caches); the members share the vocabulary and may differ in
    everything else (sizes, architecture). An ensemble of one gives the single model's scores exactly.
    """

    def __init__(self, models):
        self.models = list(models)
        if not self.models:
            raise ValueError("Ensemble: give at least one model")
        sizes = [m.cfg.vocab_size for m in self.models]
        if len(set(sizes)) > 1:
            raise ValueError(f"Ensemble: the members' vocabularies differ in size ({sizes}); they must share one")
        lengths = [getattr(m.cfg, "max_len", None) for m in self.models]
        # the longest output every member can still place (cut_sources and the decoders' limits read it)
        self.cfg = SimpleNamespace(vocab_size=sizes[0],
                                   max_len=None if None in lengths else min(lengths))

    def __len__(self):
        return len(self.models)

    @property
    def training(self):
        return any(m.training for m in self.models)

    def train(self, mode=True):
        for m in self.models:
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def start_decoding(self, src):
        """src (B, S) -> the members' decoding states, a tuple."""
        return tuple(m.start_decoding(src) for m in self.models)

    def decode_log_probs(self, prev, state):
        """prev (B,) -> the mean of the members' log-softmax (B, vocab) float64 Tensor, the new states."""
        total, states = None, []
        for m, s in zip(self.models, state):
            logits, s = m.decode_step(prev, s)
            log_p = F.log_softmax(logits.double(), dim=-1)
            total = log_p if total is None else total + log_p
            states.append(s)
        return total / len(self.models), tuple(states)

    def decode_step(self, prev, state):
        """The interface's step: the mean log-probabilities stand for the logits (their argmax is the same)."""
        return self.decode_log_probs(prev, state)

    def reorder_state(self, state, index):
        return tuple(m.reorder_state(s, index) for m, s in zip(self.models, state))


def next_log_probs(model, prev, state):
    """prev (B,) -> (next-token log-probabilities (B, vocab) float64 Tensor, the new state): the model's own
    decode_log_probs if it has one (an Ensemble), else the log-softmax of its logits."""
    if hasattr(model, "decode_log_probs"):
        return model.decode_log_probs(prev, state)
    logits, state = model.decode_step(prev, state)
    return F.log_softmax(logits.double(), dim=-1), state


def max_lengths(src, max_len_a, max_len_b, pad_id):
    """src (B, S) -> the most tokens each sentence may get, int(a * source length + b), an int array (B,)."""
    src = backend.to_numpy(src.data if isinstance(src, Tensor) else src)
    if np.ndim(src) != 2:
        raise ValueError(f"src: expected token ids of shape (B, S), got shape {np.shape(src)}")
    lengths = (np.asarray(src) != pad_id).sum(axis=1)
    return np.maximum((max_len_a * lengths + max_len_b).astype(np.int64), 0)


def _banned(scores, token_ids):
    """scores (B, vocab) array with the given tokens set to -inf, in place."""
    ids = [i for i in token_ids if 0 <= i < scores.shape[1]]
    scores[:, ids] = -np.inf
    return scores


def greedy_decode(model, src, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID):
    """src (B, S) ids -> B lists of ids: at each step the most likely next token, until eos or the length limit."""
    max_len = max_lengths(src, max_len_a, max_len_b, pad_id)
    out = [[] for _ in max_len]
    with inference(model):
        state = model.start_decoding(src)
        rows = np.nonzero(max_len > 0)[0]              # the sentence of each row still being decoded
        if len(rows) < len(max_len):
            state = model.reorder_state(state, rows)
        prev = np.full(len(rows), bos_id)
        for step in range(1, int(max_len.max(initial=0)) + 1):
            if hasattr(model, "decode_log_probs"):   # an ensemble: the argmax of its mean log-probabilities
                scores, state = model.decode_log_probs(prev, state)
            else:                                    # one model: the argmax of its logits (no softmax needed)
                scores, state = model.decode_step(prev, state)
            prev = backend.to_numpy(_banned(scores.data.copy(), (pad_id, bos_id)).argmax(axis=1))
            for r, token in zip(rows, prev):
                if token != eos_id:
                    out[r].append(int(token))
            done = (prev == eos_id) | (step >= max_len[rows])
            if done.any():                             # finished sentences leave the batch
                keep = np.nonzero(~done)[0]
                if len(keep) == 0:
                    break
                state, rows, prev = model.reorder_state(state, keep), rows[keep], prev[keep]
    return out


def length_penalty_factor(length, alpha):
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016); scores are divided by it."""
    return ((5.0 + length) / 6.0) ** alpha


def beam_search(model, src, beam_size=5, length_penalty=0.6, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, bos_id=BOS_ID,
                eos_id=EOS_ID, pad_id=PAD_ID):
    """src (B, S) ids -> B lists of ids: the best hypothesis by log p(Y) / lp(Y) found keeping beam_size per sentence.

    Each step extends the K = beam_size live hypotheses of a sentence by every token and keeps the best 2K
    candidates: those among the first K that end in eos are finished (score divided by lp, |Y| counting the eos);
    the best K others live on. A sentence is done when it has K finished hypotheses, reaches its length limit
    (its live hypotheses then finish as they are), or no live one can still beat its best finished one. With
    beam_size=1 this is greedy search.
    """
    if not isinstance(beam_size, (int, np.integer)) or beam_size < 1:
        raise ValueError(f"beam_search: beam_size must be a positive integer, got {beam_size!r}")
    K = beam_size
    max_len = max_lengths(src, max_len_a, max_len_b, pad_id)
    finished = [[] for _ in max_len]                   # per sentence: (normalised score, tokens)
    with inference(model):
        state = model.start_decoding(src)
        sents = np.nonzero(max_len > 0)[0]             # the sentence of each group of K rows still decoding
        state = model.reorder_state(state, np.repeat(sents, K))
        scores = np.full((len(sents), K), -np.inf)     # log p of each live hypothesis
        scores[:, 0] = 0.0                             # one start per sentence, not K copies of it
        hyps = np.zeros((len(sents), K, 0), dtype=np.int64)
        prev = np.full(len(sents) * K, bos_id)
        for t in range(1, int(max_len.max(initial=0)) + 1):
            log_p, state = next_log_probs(model, prev, state)
            log_p = _banned(log_p.data, (pad_id, bos_id))   # (n K, vocab)
            xp, n, V = backend.xp_of(log_p), len(sents), log_p.shape[1]
            candidates = (xp.asarray(scores).reshape(-1, 1) + log_p).reshape(n, K * V)
            top = xp.argpartition(-candidates, 2 * K - 1, axis=1)[:, :2 * K]
            # the step's one read from the device: the 2K best scores and their positions, in one float64 array
            # (positions < n K V are exact in float64)
            picked = backend.to_numpy(xp.concatenate([xp.take_along_axis(candidates, top, axis=1),
                                                      top.astype(np.float64)], axis=1))
            value, top = picked[:, :2 * K], picked[:, 2 * K:].astype(np.int64)
            order = np.lexsort((top, -value), axis=1)  # best first; ties: the lower beam, then the lower token id
            value, top = np.take_along_axis(value, order, 1), np.take_along_axis(top, order, 1)
            beam, token = top // V, top % V

            lp = length_penalty_factor(t, length_penalty)
            ends = (token == eos_id) & np.isfinite(value)
            for i, j in zip(*np.nonzero(ends[:, :K])):
                finished[sents[i]].append((value[i, j] / lp, hyps[i, beam[i, j]].tolist()))
            live = np.argsort(token == eos_id, axis=1, kind="stable")[:, :K]   # the best K not ending in eos
            scores, beam, token = (np.take_along_axis(a, live, 1) for a in (value, beam, token))
            hyps = np.concatenate([np.take_along_axis(hyps, beam[:, :, None], 1), token[:, :, None]], axis=2)

            done = np.zeros(n, dtype=bool)
            for i, s in enumerate(sents):
                if t >= max_len[s]:                    # out of length: the live hypotheses end here
                    finished[s] += [(v / lp, h.tolist()) for v, h in zip(scores[i], hyps[i]) if np.isfinite(v)]
                    done[i] = True
                elif len(finished[s]) >= K:
                    done[i] = True
                elif finished[s]:                      # log p only falls; lp is largest at one of the two ends
                    bound = scores[i].max() / max(length_penalty_factor(t + 1, length_penalty),
                                                  length_penalty_factor(max_len[s], length_penalty))
                    done[i] = max(f[0] for f in finished[s]) >= bound
            keep = np.nonzero(~done)[0]
            if len(keep) == 0:
                break
            rows = (keep[:, None] * K + beam[keep]).reshape(-1)   # each surviving hypothesis' parent row
            state = model.reorder_state(state, rows)
            sents, scores, hyps, prev = sents[keep], scores[keep], hyps[keep], token[keep].reshape(-1)
    return [max(f, key=lambda h: h[0])[1] if f else [] for f in finished]
