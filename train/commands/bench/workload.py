"""The bench's workload: a synthetic batch of the preset's shape (random ids, about a tenth padding) and a freshly
initialised model; no corpus, tokenizer or run folder needed."""
import numpy as np

import minitorch as mt
from transformer import registry

SEQ_LEN = 32             # tokens a side in the synthetic batch, eos/bos included (Multi30k's long sentences)
PADDING = 0.1            # about this fraction of each side is padding


def synthetic_batch(batch_size, seq_len, vocab_size, seed):
    """(src ids list, tgt ids list) of random ids in [4, vocab): lengths spread so that about PADDING of each padded
    side (seq_len, with eos/bos) is padding; the first sentence has the full length."""
    rng = np.random.default_rng(seed)
    shortest = max(1, round((1 - 2 * PADDING) * seq_len))
    lengths = rng.integers(shortest, seq_len + 1, size=(2, batch_size))   # with eos/bos; mean about 0.9 seq_len
    lengths[:, 0] = seq_len
    low = min(4, vocab_size - 1)                                          # past pad, unk, bos, eos where they exist
    src, tgt = ([rng.integers(low, vocab_size, size=n - 1).tolist() for n in side] for side in lengths)
    return src, tgt


def build_model(preset, device, seed, kind="transformer"):
    """A freshly initialised model of a kind (registry.MODELS) in the preset's sizes (vocabulary: the preset's)."""
    mt.manual_seed(seed)
    return registry.new_model(kind, preset.vocab_size, preset.sizes(kind)).to(device)
