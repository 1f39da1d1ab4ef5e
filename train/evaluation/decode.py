"""Translating lists of sentences: encode, decode in length-sorted batches (greedy or beam), detokenize."""
import sys

from minitorch import backend
from transformer.registry import BOS_ID, EOS_ID, MAX_LEN_A, MAX_LEN_B, PAD_ID

from ..data import corpus
from ..data.batching import source_batch, token_batches
from ..cli.progress import iterate



def max_source_tokens(model):
    """The longest source (in tokens, eos included) whose longest allowed output still fits the model's max_len
    (None for a model without a length limit)."""
    max_len = getattr(model.cfg, "max_len", None)
    return None if max_len is None else min(max_len, int((max_len - 1 - MAX_LEN_B) / MAX_LEN_A))


def cut_sources(model, src_ids):
    """(the sources cut to the longest the model can translate, the positions of those that were cut)."""
    limit = max_source_tokens(model)
    if limit is None:
        return list(src_ids), []
    return [ids[:limit - 1] for ids in src_ids], [i for i, ids in enumerate(src_ids) if len(ids) > limit - 1]


def cut_warning(model, numbers, total, what):
    """The warning about sources cut to fit the model: how many of the `total` `what` (lines, sources) sent were cut,
    which ones (numbers from 1), and why the limit is what it is, all in tokens."""
    limit = max_source_tokens(model) - 1   # tokens of the sentence itself; its eos makes one more
    needed = int(MAX_LEN_A * (limit + 1) + MAX_LEN_B) + 1
    which = f"{what if len(numbers) > 1 else what[:-1]} {corpus.line_list(numbers)}"
    return (f"warning: {len(numbers)} of {total} {what} ({which}) had more than {limit} tokens, the most this model "
            f"can translate; only {'their' if len(numbers) > 1 else 'its'} first {limit} tokens were translated (a "
            f"translation of n tokens may take {MAX_LEN_A:g} x (n + 1) + {MAX_LEN_B} tokens plus a start token, "
            f"{needed} for n = {limit}, and must fit the model's max_len of {model.cfg.max_len} tokens)")


def translate_ids(model, src_ids, beam=1, length_penalty=0.6, batch_tokens=4096, device="cpu", progress=False,
                  world=None, warn=True):
    """list of source id lists -> list of output id lists (no bos/eos), in the input order; sources too long for the
    model are cut, with a warning on stderr unless warn is false.

    With a World of several ranks, each translates its share of the sentences and all get the whole list back."""
    if world is not None and world.size > 1:
        from ..cli.parallel import gather_shares, share
        if warn and world.is_main:   # here, where the positions are those of the whole list
            cut = cut_sources(model, src_ids)[1]
            if cut:
                print(cut_warning(model, [i + 1 for i in cut], len(src_ids), "sources"), file=sys.stderr)
        mine = translate_ids(model, share(list(src_ids), world), beam, length_penalty, batch_tokens, device,
                             progress and world.is_main, warn=False)
        return gather_shares(mine, world, len(src_ids))
    from transformer.decoding import beam_search, greedy_decode
    clipped, cut = cut_sources(model, src_ids)
    if cut and warn:
        print(cut_warning(model, [i + 1 for i in cut], len(src_ids), "sources"), file=sys.stderr)
    lengths = [len(ids) + 1 for ids in clipped]
    batches = token_batches(lengths, lengths, max(batch_tokens // beam, 64), shuffle=False)
    out = [None] * len(clipped)
    for index in iterate(batches, desc=f"{'beam' if beam > 1 else 'greedy'} decoding", unit="batch",
                         enabled=progress, leave=False):
        src = backend.to_device(source_batch([clipped[i] for i in index]), device)
        kw = dict(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID)
        hyps = (greedy_decode(model, src, **kw) if beam == 1 else
                beam_search(model, src, beam_size=beam, length_penalty=length_penalty, **kw))
        for i, h in zip(index, hyps):
            out[i] = list(h)
    return out


def translate_lines(model, tokenizer, lines, first_number=1, **kw):
    """list of source sentences -> list of detokenized translations; blank lines stay blank. A warning names the
    lines too long for the model by their numbers (the first being first_number) among all the lines given."""
    lines = list(lines)
    todo = [i for i, line in enumerate(lines) if line.strip()]
    src_ids = tokenizer.encode_source([lines[i] for i in todo]) if todo else []
    cut = cut_sources(model, src_ids)[1]
    world = kw.get("world")
    if cut and (world is None or world.is_main):
        print(cut_warning(model, [todo[i] + first_number for i in cut], len(lines), "lines"), file=sys.stderr)
    hyps = translate_ids(model, src_ids, warn=False, **kw) if todo else []
    out = [""] * len(lines)
    for i, text in zip(todo, tokenizer.decode(hyps)):
        out[i] = text
    return out
