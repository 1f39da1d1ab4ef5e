"""Sentence pairs as token ids with a run's tokenizer: the pairs too long for the model, or with a side that gives
no tokens, left out and counted."""


def encode_pairs(tok, src_lines, tgt_lines, max_len, name, lang=None):
    """(source ids, target ids) of the pairs whose sides both have 1 to max_len - 1 tokens; the count of those left
    out is printed. lang: the sources' language tag (a run with tags; default its source language)."""
    src_ids, tgt_ids = tok.encode_source(src_lines, lang), tok.encode(tgt_lines)
    tagged = int(tok.source_lang is not None)   # a tag begins every source: one token that is not text
    keep, too_long, no_tokens = [], 0, 0
    for i, (x, y) in enumerate(zip(src_ids, tgt_ids)):
        if len(x) <= tagged or not y:
            no_tokens += 1
        elif len(x) >= max_len or len(y) >= max_len:
            too_long += 1
        else:
            keep.append(i)
    if too_long:
        print(f"left out {too_long} of {len(src_ids)} {name} pairs longer than {max_len - 1} tokens "
              f"(max_len {max_len})")
    if no_tokens:
        print(f"left out {no_tokens} of {len(src_ids)} {name} pairs with a side that gives no tokens")
    return [src_ids[i] for i in keep], [tgt_ids[i] for i in keep]
