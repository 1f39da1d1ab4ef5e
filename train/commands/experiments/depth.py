"""depth: pre-LN against post-LN Transformers at several depths, with and without learning-rate warmup, on a short
training budget: the loss curves, and whether each run trained, stalled or diverged.

Post-LN (the 2017 original) normalises after each residual addition, so every gradient on its way down passes
through the LayerNorms above; at initialisation the gradients of the layers near the output are large and grow with
depth, and full-size Adam steps from the first update can throw a deep model off. Warmup was the original remedy.
Pre-LN normalises only each sub-layer's input and leaves an identity path from every layer to the output, which
trains without warmup (Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture").

Every run has the preset's width, n encoder and n decoder layers, the same initial seed, batches and peak learning
rate, and fit's update (loop/assemble.make_update: Adam (0.9, 0.98) without weight decay, gradient clipping at the
preset's norm, the preset's label smoothing and dropout):
    warmup       lr rises linearly to the peak over --warmup steps, then decays as 1/sqrt(step) (fit's schedule)
    no-warmup    the peak from the first step, then the same 1/sqrt(step) decay after --warmup steps
Outcome of a run, from its final loss (the mean over the last tenth of the steps):
    diverged    the loss became nan/inf, or the final loss is more than 1 nat above the lowest loss of the run
    stalled     the final loss is not 0.25 nat below the unigram loss: the label-smoothed cross-entropy of the best
                prediction that ignores the source and the context, the target tokens' frequencies, which every
                model learns first; a run still there has learned nothing more
    trains      otherwise
"""
import math
import time

import numpy as np

import minitorch as mt
from transformer import registry

from ...data import corpus, download
from ...cli.arguments import check_device
from ...data.batching import token_batches, training_batch
from ...run.presets import PRESETS
from ...loop.assemble import make_update
from ...data.tokenizer import PAD_ID, train_tokenizer
from . import results, training
from .options import add_training_arguments, choice_list, int_list

SCHEDULES = ("warmup", "no-warmup")


def add_arguments(p):
    p.add_argument("--layers", type=int_list, default=[2, 6, 12],
                   help="encoder (and decoder) layers, comma-separated (default: 2,6,12)")
    p.add_argument("--norms", type=choice_list("pre", "post"), default=["pre", "post"],
                   help="pre, post or both (default: pre,post)")
    p.add_argument("--schedules", type=choice_list(*SCHEDULES), default=list(SCHEDULES),
                   help="warmup, no-warmup or both (default: warmup,no-warmup)")
    add_training_arguments(p, max_steps=200, warmup="a quarter of --max-steps")


def main(args, out):
    device = check_device(args.device)
    preset = PRESETS[args.preset]
    steps = args.max_steps
    warmup = args.warmup or max(1, steps // 4)
    lr = args.lr or preset.lr
    batches, vocab_size = training_batches(args, preset, out, steps)
    recipe = preset.replace(lr=lr, warmup=warmup, weight_decay=0.0)   # plain Adam, as the docstring
    unigram = unigram_loss([b[2] for b in batches], vocab_size, preset.label_smoothing)
    data = {"preset": preset.name, "steps": steps, "warmup": warmup, "lr": lr, "vocab_size": vocab_size,
            "unigram_loss": unigram,
            "batch_tokens": args.batch_tokens or preset.batch_tokens, "runs": []}
    for n_layers in args.layers:
        for norm in args.norms:
            for schedule in args.schedules:
                sizes = dict(preset.model, n_encoder_layers=n_layers, n_decoder_layers=n_layers, norm=norm)
                start = time.perf_counter()
                curve = train_curve(sizes, vocab_size, batches, recipe, schedule == "warmup", args.seed, device)
                r = dict(layers=n_layers, norm=norm, schedule=schedule, seconds=time.perf_counter() - start,
                         **curve, **verdict(curve["loss"], unigram))
                data["runs"].append(r)
                why = f": {r['why']}" if r["why"] else ""
                print(f"{n_layers:3d} layers, {norm}-LN, {schedule:9s}: loss {r['loss'][0]:.2f} -> "
                      f"{r['final_loss']:.2f}, {r['outcome']}{why} ({r['seconds']:.0f} s)", flush=True)
    rows = [[r["layers"], r["norm"] + "-LN", r["schedule"], r["loss"][0], r["lowest_loss"], r["final_loss"],
             r["grad_norm"][0], r["outcome"] if r["outcome"] == "trains" else f"**{r['outcome']}**: {r['why']}"]
            for r in data["runs"]]
    text = (f"{steps} steps of about {data['batch_tokens']} tokens, peak lr {lr:g}, warmup {warmup} steps, "
            f"`{preset.name}` width; losses in nats per target token (label-smoothed); final: mean over the last "
            f"tenth of the steps; unigram loss (token frequencies only) {unigram:.2f}.\n\n"
            + results.markdown_table(["layers (enc + dec each)", "norm", "schedule", "first loss", "lowest loss",
                                      "final loss", "grad norm at step 1", "outcome"], rows))
    results.write(out, "depth", text, data)
    plot(data, out / "depth.png")
    return 0


def training_batches(args, preset, out, steps):
    """The first `steps` training batches (src, tgt_in, tgt_out) of the corpus, in fit's order, and the vocabulary
    size of the tokenizer trained for them (out/spm.model)."""
    src, tgt = args.src or preset.src, args.tgt or preset.tgt
    data_dir = corpus.find_corpus(training.corpus_dir(args, out), src, tgt, download=download.download_multi30k)
    train_src, train_tgt = corpus.read_parallel(data_dir, "train", src, tgt)
    tok, _ = train_tokenizer(train_src + train_tgt, out / "spm.model", args.vocab_size or preset.vocab_size)
    max_len = preset.model["max_len"]
    pairs = [(x, y) for x, y in zip(tok.encode(train_src), tok.encode(train_tgt))
             if 0 < len(x) < max_len and 0 < len(y) < max_len]
    src_ids, tgt_ids = [x for x, _ in pairs], [y for _, y in pairs]
    lens = [len(x) + 1 for x in src_ids], [len(y) + 1 for y in tgt_ids]
    batches, epoch = [], 0
    while len(batches) < steps:
        batches += token_batches(*lens, args.batch_tokens or preset.batch_tokens, args.seed, epoch)
        epoch += 1
    return [training_batch([src_ids[i] for i in b], [tgt_ids[i] for i in b]) for b in batches[:steps]], tok.vocab_size


def train_curve(sizes, vocab_size, batches, recipe, use_warmup, seed, device):
    """Train a fresh Transformer on `batches` with fit's update (recipe: the preset with the experiment's lr and
    warmup) -> {"loss": per-step losses, "grad_norm": per-step norms before clipping}; stops at the first non-finite
    loss (kept as the last entry)."""
    mt.manual_seed(seed)
    model = registry.new_model("transformer", vocab_size, sizes).to(device).train()
    step_fn = make_update(model, recipe, sizes["d_model"], device, rdrop=0.0, ramp=use_warmup).step_fn
    losses, grad_norms = [], []
    for batch in batches:
        result = step_fn(batch)
        if not result.applied:   # a nan/inf loss, or a finite one whose gradients are not: either way diverged
            losses.append(result.loss if not math.isfinite(result.loss) else math.nan)
            break
        losses.append(result.loss)
        grad_norms.append(result.grad_norm)
    return {"loss": losses, "grad_norm": grad_norms}


def unigram_loss(targets, vocab_size, label_smoothing):
    """The label-smoothed cross-entropy of the best prediction that ignores its input: q = (1 - e) p + e / V, p the
    frequencies of the (non-padding) target tokens; its expected loss is the entropy of q."""
    counts = np.zeros(vocab_size)
    for t in targets:
        t = np.asarray(t)
        np.add.at(counts, t[t != PAD_ID], 1)
    q = (1 - label_smoothing) * counts / counts.sum() + label_smoothing / vocab_size
    return float(-(q * np.log(q)).sum())


def verdict(losses, unigram):
    """{outcome: trains|stalled|diverged, why, final_loss, lowest_loss} by the rules in the module docstring."""
    if not math.isfinite(losses[-1]):
        return {"outcome": "diverged", "why": f"loss {losses[-1]} at step {len(losses)}", "final_loss": losses[-1],
                "lowest_loss": min(losses[:-1], default=float("nan"))}
    final, lowest = float(np.mean(losses[-max(1, len(losses) // 10):])), min(losses)
    if final > lowest + 1.0:
        outcome, why = "diverged", f"loss rose from {lowest:.2f} to {final:.2f}"
    elif final > unigram - 0.25:
        outcome, why = "stalled", f"final loss {final:.2f}, unigram loss {unigram:.2f}"
    else:
        outcome, why = "trains", ""
    return {"outcome": outcome, "why": why, "final_loss": final, "lowest_loss": lowest}


def plot(data, path):
    """One panel per depth: the loss of each (norm, schedule) against the step, the unigram loss (dash-dot); x
    marks a diverged run's end."""
    plt = results.pyplot()
    depths = sorted({r["layers"] for r in data["runs"]})
    fig, axes = plt.subplots(1, len(depths), figsize=(4.6 * len(depths), 4), sharey=True, squeeze=False)
    colors = {"pre": "tab:blue", "post": "tab:red"}
    for ax, n_layers in zip(axes[0], depths):
        for r in (r for r in data["runs"] if r["layers"] == n_layers):
            loss = np.asarray(r["loss"], dtype=np.float64)
            steps = np.arange(1, len(loss) + 1)
            ok = np.isfinite(loss)
            ax.plot(steps[ok], loss[ok], "-" if r["schedule"] == "warmup" else "--", color=colors[r["norm"]], lw=1.2,
                    label=f"{r['norm']}-LN, {r['schedule']}" + ("" if r["outcome"] == "trains" else
                                                                 f" ({r['outcome']})"))
            if r["outcome"] == "diverged" and ok.any():
                ax.plot(steps[ok][-1], loss[ok][-1], "x", color=colors[r["norm"]], ms=9, mew=2)
        ax.axvline(data["warmup"], color="gray", lw=0.8, ls=":")
        ax.axhline(data["unigram_loss"], color="black", lw=0.8, ls="-.", label="unigram loss")
        ax.set_title(f"{n_layers} + {n_layers} layers")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("training loss (nats / token)")
    fig.suptitle(f"pre-LN vs post-LN, peak lr {data['lr']:g}, warmup {data['warmup']} steps (dotted line)")
    return results.save_figure(fig, path)
