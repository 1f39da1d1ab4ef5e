"""Train the Transformer to translate, top to bottom in one file, as nanoGPT's train.py reads: the settings, the
data, the model, the optimizer, the training loop, the evaluation, in that order.

Every piece is the one `python3 -m train fit` uses: the demo corpus (train/data/demo_corpus.py), the SentencePiece
tokenizer and the token-bucketed batches (train/data/), the Transformer (transformer/), fit's Adam with its warm-up
schedule and its training step (train/loop/step.py: forward, label-smoothed loss, backward, clipping, update) and its
greedy decoding and BLEU (train/evaluation/). What fit adds around them is what a long run needs and a reader does
not: a run folder, checkpoints and --resume, several processes, progress bars, BLAS-thread choice.

    python3 examples/train_translator.py               # the demo preset: 6 epochs (414 steps), about a minute
    python3 examples/train_translator.py --steps 60    # a quick look: the loss falls, a few translations
"""
import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

import minitorch as mt
from train.data import demo_corpus
from train.data.batching import token_batches, training_batch
from train.data.encoding import encode_pairs
from train.data.tokenizer import PAD_ID, train_tokenizer
from train.evaluation.decode import translate_ids
from train.evaluation.metrics import bleu
from train.loop.step import TrainStep, make_optimizer
from train.run.presets import PRESETS
from transformer import registry

# ----- settings: the demo preset's recipe (train/run/presets.py), a few of them flags -----
parser = argparse.ArgumentParser(description="Train the Transformer on the demo corpus, top to bottom.")
parser.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the preset's "
                                                            "epochs)")
parser.add_argument("--eval-sentences", type=int, default=200, help="validation sentences translated for BLEU")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--log-every", type=int, default=20, help="print the loss every n steps")
args = parser.parse_args()
preset = PRESETS["demo"]
sizes = preset.sizes("transformer")   # d_model 64, 4 heads, d_ff 256, 2 + 2 layers, dropout 0.1, max_len 128
work = Path(tempfile.mkdtemp(prefix="train_translator-"))   # the tokenizer's model file goes here

# ----- data: sentence pairs -> subword ids -> batches of about batch_tokens padded tokens -----
splits = demo_corpus.generate(seed=args.seed)   # {"train": (English lines, toy lines), "val": ..., "test": ...}
train_src, train_tgt = splits["train"]
val_src, val_tgt = splits["val"]
tok, _ = train_tokenizer(train_src + train_tgt, work / "spm.model", preset.vocab_size)   # one joint vocabulary
src_ids, tgt_ids = encode_pairs(tok, train_src, train_tgt, sizes["max_len"], "training")
val_ids = encode_pairs(tok, val_src, val_tgt, sizes["max_len"], "validation")
print(f"data: {len(src_ids)} training and {len(val_ids[0])} validation pairs, vocabulary {tok.vocab_size}")


def batches(sources, targets, epoch, shuffle=True):
    """Each batch as (src, tgt_in, tgt_out) int arrays: sentences of similar length together (train/data/batching)."""
    lengths = [len(s) + 1 for s in sources], [len(t) + 1 for t in targets]   # + eos, + bos
    for index in token_batches(*lengths, preset.batch_tokens, seed=args.seed, epoch=epoch, shuffle=shuffle):
        yield training_batch([sources[i] for i in index], [targets[i] for i in index])


# ----- model: the Transformer of "Attention Is All You Need", at the demo's size -----
mt.manual_seed(args.seed)   # the initial weights and the dropout masks
model = registry.new_model("transformer", tok.vocab_size, sizes)
print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")

# ----- optimizer: Adam (0.9, 0.98) with the paper's warm-up, peaking at lr after warmup steps -----
optimizer, schedule = make_optimizer(model.parameters(), preset.lr, preset.warmup, sizes["d_model"],
                                     preset.weight_decay)
# one step: forward, label-smoothed cross-entropy (padding ignored), backward, clip the gradients' norm, update
step = TrainStep(model, optimizer, schedule, preset.label_smoothing, preset.clip_norm, device="cpu")

# ----- the training loop -----
model.train()
done, start, losses = 0, time.perf_counter(), []
for epoch in range(preset.epochs):
    for batch in batches(src_ids, tgt_ids, epoch):
        result = step(batch)   # a StepResult: the loss, the gradient norm before clipping, ...
        done += 1
        losses.append(result.loss)
        if done % args.log_every == 0:
            print(f"epoch {epoch + 1} step {done}: loss {np.mean(losses[-args.log_every:]):.3f}, gradient norm "
                  f"{result.grad_norm:.2f}, lr {optimizer.lr:.2e}")
        if done == args.steps:
            break
    if done == args.steps:
        break
print(f"trained {done} steps in {time.perf_counter() - start:.0f} s: loss {losses[0]:.3f} at the first step, "
      f"{np.mean(losses[-10:]):.3f} over the last 10")

# ----- evaluation: the loss on held-out pairs (plain, without smoothing), then greedy translations and BLEU -----
model.eval()   # no dropout
total, tokens = 0.0, 0
with mt.no_grad():
    for src, tgt_in, tgt_out in batches(*val_ids, epoch=0, shuffle=False):
        logits = model(src, tgt_in)
        total += float(mt.functional.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, reduction="sum").item())
        tokens += int((tgt_out != PAD_ID).sum())
    n = min(args.eval_sentences, len(val_src))
    hypotheses = tok.decode(translate_ids(model, tok.encode(val_src[:n]), beam=1))
score, _ = bleu(hypotheses, val_tgt[:n])
print(f"validation: NLL {total / tokens:.3f} (perplexity {math.exp(min(total / tokens, 50)):.1f}), greedy BLEU "
      f"{score:.2f} on {n} sentences")
for source, reference, hypothesis in list(zip(val_src, val_tgt, hypotheses))[:3]:
    print(f"  {source}\n    reference: {reference}\n    model:     {hypothesis}")
