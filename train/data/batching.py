"""Token-bucketed batches: sentences of similar length together, about `batch_tokens` tokens a batch.

A batch's size is counted with padding on its longer side, n_sentences * max(longest source, longest target), so a
batch of short sentences holds many and a batch of long ones few, with little padding either way. Each epoch draws a
new order from (seed, epoch): random tie-breaking among equal lengths changes which sentences share a batch, and the
batches are shuffled. The same (seed, epoch) always gives the same batches, which is what lets --resume continue
exactly.
"""
import numpy as np

from .tokenizer import BOS_ID, EOS_ID, PAD_ID


def token_batches(src_lens, tgt_lens, batch_tokens, seed=0, epoch=0, shuffle=True):
    """list of index arrays into the corpus; src_lens/tgt_lens (N,) are lengths with eos/bos counted."""
    src_lens, tgt_lens = np.asarray(src_lens), np.asarray(tgt_lens)
    longest = np.maximum(src_lens, tgt_lens)
    if shuffle:
        rng = np.random.default_rng([seed, epoch])
        order = np.lexsort((rng.random(len(longest)), longest))
    else:
        order = np.argsort(longest, kind="stable")
    batches, start, widest = [], 0, 0
    for k, i in enumerate(order):
        widest_with_i = max(widest, longest[i])
        if k > start and widest_with_i * (k - start + 1) > batch_tokens:
            batches.append(order[start:k])
            start, widest_with_i = k, longest[i]
        widest = widest_with_i
    if len(order) > start:
        batches.append(order[start:])
    if shuffle:
        rng.shuffle(batches)
    return batches


def pad(seqs, prefix=(), suffix=()):
    """list of id lists -> (B, max length) int64, each row prefix + seq + suffix then PAD_ID."""
    rows = [list(prefix) + list(s) + list(suffix) for s in seqs]
    out = np.full((len(rows), max(map(len, rows))), PAD_ID, dtype=np.int64)
    for r, row in enumerate(rows):
        out[r, :len(row)] = row
    return out


def source_batch(src_ids):
    """(B, S): each source sentence followed by eos."""
    return pad(src_ids, suffix=(EOS_ID,))


def training_batch(src_ids, tgt_ids):
    """(src (B, S), tgt_in (B, T), tgt_out (B, T)) for teacher forcing: tgt_in = bos + y, tgt_out = y + eos."""
    return source_batch(src_ids), pad(tgt_ids, prefix=(BOS_ID,)), pad(tgt_ids, suffix=(EOS_ID,))
