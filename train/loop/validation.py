"""Validation after each epoch: loss (label-smoothed and plain NLL) over the validation split, and greedy BLEU and
chrF of its first sentences (the same of the held-back slice, fit --held-back); the line printed for an epoch and the
example translations."""
import math
from dataclasses import dataclass

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import backend

from ..evaluation import metrics
from ..cli import parallel
from ..data.batching import token_batches, training_batch
from ..evaluation.decode import translate_ids
from ..data.encoding import encode_pairs
from ..data.tokenizer import PAD_ID
from ..cli.errors import TrainError
from ..cli.prog import PROG

N_EXAMPLES = 3


@dataclass
class ValidationData:
    """What validation scores on: the validation lines (src, tgt) and pairs, the sources of its BLEU sentences, and
    the held-back slice's (held: a dict of its lines, pairs and BLEU sources, or None)."""
    src: list
    tgt: list
    pairs: tuple
    n_bleu: int
    bleu_ids: list
    held: dict = None


def prepare(tok, val_src, val_tgt, held, train_src, settings, max_len, data_dir):
    """The ValidationData of a run (held: the held-back slice's source and target lines, or None); TrainError when
    the training or validation split has no pair that fits the model."""
    pairs = encode_pairs(tok, val_src, val_tgt, max_len, "validation")
    for split, encoded in (("train", train_src), ("val", pairs[0])):
        if not encoded:
            raise TrainError(f"{data_dir}: the {split} split has no sentence pair of at most {max_len - 1} "
                             f"tokens (max_len {max_len}) on both sides")
    n_bleu = min(settings.val_bleu_sentences or len(val_src), len(val_src))
    slice_ = None
    if held:
        n = min(settings.val_bleu_sentences or len(held[0]), len(held[0]))
        held_pairs = encode_pairs(tok, held[0], held[1], max_len, "held-back")
        slice_ = {"src": held[0], "tgt": held[1], "n_bleu": n, "bleu_ids": tok.encode_source(held[0][:n]),
                  "pairs": held_pairs}
    return ValidationData(val_src, val_tgt, pairs, n_bleu, tok.encode_source(val_src[:n_bleu]), slice_)


@dataclass(frozen=True)
class Scoring:
    """How validation scores: batches of about batch_tokens tokens, the loss's label smoothing, on device, shared
    among the ranks of world."""
    batch_tokens: int
    label_smoothing: float
    device: str
    world: object


def validate(model, data, tok, stop, how):
    """(the record: validation loss (label-smoothed and plain NLL) and greedy BLEU/chrF, and the same of the held-back
    slice (keys held_*) when the run has one; the first example translations), or None if stopped by Ctrl-C.
    data: ValidationData; tok: the run's tokenizer; how: Scoring.

    In a job of several ranks each takes a share of the batches and sentences, and the sums and translations are
    gathered, so that every rank gets the same figures; a Ctrl-C then takes effect at the end of validation."""
    model.eval()
    try:
        slice_ = data.held
        val = score(model, data.pairs, data.bleu_ids, stop, how)
        held = slice_ and val and score(model, slice_["pairs"], slice_["bleu_ids"], stop, how)
        if val is None or (slice_ and held is None):
            return None
    finally:
        model.train()
    n = data.n_bleu
    (total, nll, tokens), hyp_ids = val
    hyps, refs = tok.decode(hyp_ids), data.tgt[:n]
    examples = list(zip(data.src[:N_EXAMPLES], refs[:N_EXAMPLES], hyps[:N_EXAMPLES]))
    bleu, bleu_sig = metrics.bleu(hyps, refs)
    chrf, chrf_sig = metrics.chrf(hyps, refs)
    record = {"val_loss": total / tokens, "val_nll": nll / tokens, "val_ppl": math.exp(min(nll / tokens, 50)),
              "val_bleu": bleu, "val_chrf": chrf, "val_bleu_sentences": n, "decoding": "greedy",
              "bleu_signature": bleu_sig, "chrf_signature": chrf_sig}
    if held:
        (total, nll, tokens), hyp_ids = held
        hyps, refs = tok.decode(hyp_ids), slice_["tgt"][:slice_["n_bleu"]]
        record.update(held_loss=total / tokens, held_nll=nll / tokens, held_ppl=math.exp(min(nll / tokens, 50)),
                      held_bleu=metrics.bleu(hyps, refs)[0], held_chrf=metrics.chrf(hyps, refs)[0],
                      held_bleu_sentences=slice_["n_bleu"])
    return record, examples


def score(model, pairs, bleu_ids, stop, how):
    """((label-smoothed loss sum, NLL sum, target tokens), greedy translations of bleu_ids) of encoded pairs by a
    model in eval mode, scored as `how` (Scoring) says; None if stopped by Ctrl-C."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a diverged model: nan, no noise
        losses, tokens = 0.0, 0   # the loss sums stay on the device, read once after the loop
        src_ids, tgt_ids = pairs
        lens = [len(x) + 1 for x in src_ids], [len(y) + 1 for y in tgt_ids]
        with mt.no_grad():
            batches = token_batches(*lens, how.batch_tokens, shuffle=False)
            for index in parallel.share(batches, how.world):
                if stop.requested and how.world.size == 1:
                    return None
                batch = training_batch([src_ids[i] for i in index], [tgt_ids[i] for i in index])
                tokens += int((batch[2] != PAD_ID).sum())
                src, tgt_in, tgt_out = (backend.to_device(a, how.device) for a in batch)
                logits = model(src, tgt_in)
                smoothed, nll = (F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, reduction="sum",
                                                 label_smoothing=e) for e in (how.label_smoothing, 0.0))
                losses = losses + mt.stack([smoothed, nll]).double()
        host = backend.to_numpy(losses.data) if isinstance(losses, mt.Tensor) else np.zeros(2)
        sums = how.world.allreduce_sum_(np.array([*host, tokens], dtype=np.float64))
        hyp_ids = translate_ids(model, bleu_ids, beam=1, batch_tokens=how.batch_tokens,
                                device=how.device, progress=how.world.is_main, world=how.world)
        if how.world.any(stop.requested):
            return None
    return (float(sums[0]), float(sums[1]), int(sums[2])), hyp_ids


def print_examples(examples, run_dir, src_lang):
    """The last validation's example translations, and how to translate more."""
    for src, ref, hyp in examples:
        print(f"\n  source:     {src}\n  reference:  {ref}\n  hypothesis: {hyp}")
    if examples:
        print(f"\ntranslate more with: {PROG} translate --run-dir {run_dir} < {src_lang}.txt")


def epoch_line(record, number, partial=False):
    """The line printed after an epoch: each loss named (train: the mean over the epoch's steps, where the progress
    bar shows the last few steps'), the perplexity beside the NLL it is the exponential of."""
    return (f"epoch {number}{' (partial)' if partial else ''}, step {record['step']}: label-smoothed loss: train "
            f"{record['train_loss']:.3f} (epoch mean), val {record['val_loss']:.3f}; val nll {record['val_nll']:.3f} "
            f"(ppl {record['val_ppl']:.2f}); greedy val BLEU {record['val_bleu']:.2f}, chrF {record['val_chrf']:.2f} "
            f"on {record['val_bleu_sentences']} sentences" + (
                f"; held-back nll {record['held_nll']:.3f}, greedy BLEU {record['held_bleu']:.2f} on "
                f"{record['held_bleu_sentences']}" if "held_bleu" in record else ""))
