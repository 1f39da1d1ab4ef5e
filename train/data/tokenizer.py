"""A joint SentencePiece BPE model (one vocabulary for source and target), trained on the training split.

Special ids are fixed for every model in the project (transformer/registry.py: PAD_ID, UNK_ID, BOS_ID, EOS_ID). A
run trained with a second source language (fit --extra-source) also has a tag per source language, `<de>`, `<fr>`: a
control symbol (never produced from text, so a user's "<de>" stays text) that begins every source sentence, telling
the model its language.
"""
import io
import os
import re
from pathlib import Path

import sentencepiece as spm

from transformer.registry import BOS_ID, EOS_ID, PAD_ID, UNK_ID

from ..cli import memory
from ..cli.errors import TrainError
from ..cli.prog import PROG



def tag_piece(lang):
    """The piece of a source-language tag: de -> <de>."""
    return f"<{lang}>"


def source_tag_language(settings):
    """The language whose tag begins every source sentence in a run's settings (a run with --extra-source), else
    None (no tags)."""
    return settings.src if settings.extra_source else None


class Tokenizer:
    """Text <-> token ids with a SentencePiece model file; source_lang: the tag that begins every source sentence
    (None: sources are untagged)."""

    def __init__(self, path, source_lang=None):
        path = Path(path)
        if not path.is_file():
            raise TrainError(f"{path}: no tokenizer model (is this a run folder made by `{PROG} fit`?)")
        self.path = path
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(path))
        except (RuntimeError, OSError) as e:
            raise TrainError(f"{path}: not a readable SentencePiece model (truncated or corrupt?): {e}") from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (PAD_ID, UNK_ID, BOS_ID,
                                                                                       EOS_ID):
            raise TrainError(f"{path}: special ids must be pad 0, unk 1, bos 2, eos 3")
        self.source_lang = source_lang
        if source_lang is not None:
            self.tag_id(source_lang)

    @property
    def vocab_size(self):
        return self.sp.get_piece_size()

    def encode(self, lines):
        """list[str] -> list[list[int]] (no bos/eos)."""
        # one sentence at a time: SentencePiece encodes a list on a pool of threads, and where a thread's stack cannot
        # be had (an address-space limit) it aborts the process (std::terminate); this is about as fast (Multi30k)
        return [self.sp.encode(line) for line in lines]

    def encode_source(self, lines, lang=None):
        """Source sentences -> ids, each after its language's tag (lang, default source_lang) when the run has
        tags (source_lang is not None)."""
        ids = self.encode(lines)
        if self.source_lang is None:
            return ids
        tag = self.tag_id(lang or self.source_lang)
        return [[tag] + x for x in ids]

    def tag_id(self, lang):
        """The id of lang's source tag; TrainError when the model has none."""
        i = self.sp.piece_to_id(tag_piece(lang))
        if i == UNK_ID:
            raise TrainError(f"{self.path}: no source-language tag {tag_piece(lang)} (the run was trained without "
                             f"--extra-source, or with other languages)")
        return i

    def vocabulary(self):
        """[(piece, score)] of every id: two models with the same vocabulary encode every text alike."""
        return [(self.sp.id_to_piece(i), self.sp.get_score(i)) for i in range(self.vocab_size)]

    def decode(self, ids):
        """list[list[int]] -> list[str], detokenized."""
        return [self.sp.decode([int(i) for i in seq]) for seq in ids]

    def pieces(self, ids):
        """The subword strings of a list of ids (for plot axes)."""
        return [self.sp.id_to_piece(int(i)) for i in ids]


def train_tokenizer(lines, path, vocab_size, tags=()):
    """Train on lines, write the model to path atomically, return (Tokenizer, note); tags: source languages that
    get a tag piece.

    vocab_size is an upper bound: a small corpus may not support it, and then the vocabulary is capped at what the
    corpus gives (the note says so); a vocab_size too small for the corpus's characters raises TrainError.
    """
    try:
        with memory.during(PHASE, HINT):   # SentencePiece aborts the process where it runs out: a child's
            model = memory.isolated(PHASE, HINT, _trained_model, lines, vocab_size, tags)
    except RuntimeError as e:
        need = re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(e))
        if need:
            raise TrainError(f"--vocab-size {vocab_size} is too small: the training text has {int(need.group(1)) - 4} "
                             f"distinct characters, so the vocabulary needs at least {int(need.group(1))} entries")
        raise TrainError(f"SentencePiece training failed: {e}") from None
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(model)
    os.replace(tmp, path)
    tok = Tokenizer(path)
    note = None
    if tok.vocab_size < vocab_size:
        note = f"vocabulary capped at {tok.vocab_size} (asked for {vocab_size}; the training text supports no more)"
    return tok, note


PHASE, HINT = "tokenizer training", "a smaller --vocab-size needs less"


def _trained_model(lines, vocab_size, tags):
    """The bytes of a SentencePiece model trained on lines (train_tokenizer's)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size, hard_vocab_limit=False,
        model_type="bpe", character_coverage=1.0, pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        input_sentence_size=1_000_000, shuffle_input_sentence=True, num_threads=2, minloglevel=2,
        control_symbols=[tag_piece(lang) for lang in tags])
    return model.getvalue()


def run_tokenizer(run_dir, settings, parts, world, resumed):
    """The tokenizer of the run in run_dir: a resumed run's own spm.model; for a new run a joint SentencePiece model
    trained on the training text of `parts` ((language, source lines, target lines) per source language) by rank 0,
    which the other ranks then load. settings: the run's (src, extra_source, vocab_size)."""
    if resumed:
        return Tokenizer(Path(run_dir) / "spm.model", source_tag_language(settings))
    src, extra = settings.src, settings.extra_source
    if world.is_main:
        text = [line for _, s_lines, t_lines in parts for line in s_lines] + parts[0][2]
        tok, note = train_tokenizer(text, Path(run_dir) / "spm.model", settings.vocab_size,
                                    tags=(src, extra) if extra else ())
        print(f"tokenizer: joint SentencePiece, {tok.vocab_size} pieces" + (f" ({note})" if note else ""))
    world.barrier()   # the other ranks load the tokenizer that rank 0 has written
    tok = tok if world.is_main else Tokenizer(Path(run_dir) / "spm.model")
    tok.source_lang = source_tag_language(settings)
    return tok
