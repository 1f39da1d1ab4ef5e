"""Translating lists of sentences: encode, decode in length-sorted batches (greedy or beam), detokenize."""
import sys

from tqdm import tqdm

from minitorch import backend

from .batching import source_batch, token_batches

MAX_LEN_A, MAX_LEN_B = 1.5, 10  # output length limit: a * source length + b


def max_source_tokens(model):
    """The longest source (in tokens, eos included) whose longest allowed output still fits the model's max_len
    (None for a model without a length limit)."""
    max_len = getattr(model.cfg, "max_len", None)
    return None if max_len is None else min(max_len, int((max_len - 1 - MAX_LEN_B) / MAX_LEN_A))


def translate_ids(model, src_ids, beam=1, length_penalty=0.6, batch_tokens=4096, device="cpu", progress=False,
                  world=None):
    """list of source id lists -> list of output id lists (no bos/eos), in the input order.

    With a World of several ranks, each translates its share of the sentences and all get the whole list back."""
    if world is not None and world.size > 1:
        from .parallel import gather_shares, share
        mine = translate_ids(model, share(list(src_ids), world), beam, length_penalty, batch_tokens, device,
                             progress and world.is_main)
        return gather_shares(mine, world, len(src_ids))
    from transformer.decoding import beam_search, greedy_decode
    limit = max_source_tokens(model)
    clipped = [ids[:limit - 1] for ids in src_ids] if limit is not None else list(src_ids)
    n_cut = sum(len(a) != len(b) for a, b in zip(clipped, src_ids))
    if n_cut:
        print(f"warning: {n_cut} of {len(src_ids)} sources had more than {limit - 1} tokens; they were cut to fit the "
              f"model's max_len {model.cfg.max_len}", file=sys.stderr)
    lengths = [len(ids) + 1 for ids in clipped]
    batches = token_batches(lengths, lengths, max(batch_tokens // beam, 64), shuffle=False)
    out = [None] * len(clipped)
    for index in tqdm(batches, desc=f"{'beam' if beam > 1 else 'greedy'} decoding", unit="batch",
                      disable=None if progress else True, leave=False):
        src = backend.to_device(source_batch([clipped[i] for i in index]), device)
        kw = dict(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B)
        hyps = (greedy_decode(model, src, **kw) if beam == 1 else
                beam_search(model, src, beam_size=beam, length_penalty=length_penalty, **kw))
        for i, h in zip(index, hyps):
            out[i] = list(h)
    return out


def translate_lines(model, tokenizer, lines, **kw):
    """list of source sentences -> list of detokenized translations; blank lines stay blank."""
    lines = list(lines)
    todo = [i for i, line in enumerate(lines) if line.strip()]
    hyps = translate_ids(model, tokenizer.encode([lines[i] for i in todo]), **kw) if todo else []
    out = [""] * len(lines)
    for i, text in zip(todo, tokenizer.decode(hyps)):
        out[i] = text
    return out
