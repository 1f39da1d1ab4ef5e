"""compare: the Transformer against the two LSTM baselines at about the same parameter count, trained by `fit` on the
same corpus and tokenizer settings, batches, schedule and budget, and scored by `evaluate` with the same beam search.

    transformer   the encoder-decoder Transformer of the preset (pre-LN)
    lstm          LSTM encoder-decoder: the encoder's final state starts the decoder (Sutskever et al. 2014)
    lstm-attn     bidirectional LSTM encoder, LSTM decoder with additive attention (Bahdanau et al. 2015)

Writes compare.md (the table: parameters, epochs, time, speed, validation and test BLEU cased and lowercased,
chrF), compare.json, and compare.png: greedy validation BLEU after each epoch against the training step and
against training time (the seconds spent in training steps, without the validation between epochs; on a machine
shared with other work, time depends on that work too, steps do not). The runs stay in OUT/runs/MODEL, usable with
evaluate, translate and plot, and with `experiment gradient-path --runs OUT/runs`.

`--runs transformer=DIR,lstm=DIR,...` compares runs already trained by `python3 -m train fit` (e.g. full-length runs
on Multi30k) instead of training: the same table and figure from their metrics, with evaluate's beam search on their
`best` checkpoints (their wall time is not recorded, so that column is left empty).
"""
import argparse
import json
from pathlib import Path

from transformer import registry

from ...run import checkpoint
from ...run.config import read_config
from ...data import corpus
from .. import evaluate
from ...cli.arguments import check_device, positive_int
from ...cli.errors import TrainError
from . import results, training
from .options import add_training_arguments, choice_list


def add_arguments(p):
    p.add_argument("--models", type=choice_list(*registry.MODELS), default=list(registry.MODELS),
                   help=f"comma-separated, of {', '.join(registry.MODELS)} (default: all three)")
    p.add_argument("--epochs", type=positive_int, help="epochs per model (default: the preset's)")
    p.add_argument("--beam", type=positive_int, default=5, help="beam size of the final evaluation (default 5)")
    p.add_argument("--split", help="the test split (default: the first of test_2016_flickr, test in the corpus)")
    p.add_argument("--runs", type=run_list, help="MODEL=DIR,...: summarise these finished `fit` runs instead of "
                                                 "training (e.g. transformer=runs/small-de-en,lstm=runs/small-lstm)")
    add_training_arguments(p)


def run_list(text):
    """'transformer=DIR,lstm=DIR' -> {model: Path}, each model one of registry.MODELS."""
    runs = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        kind, _, folder = item.partition("=")
        if kind not in registry.MODELS or not folder:
            raise argparse.ArgumentTypeError(f"expected MODEL=DIR items with MODEL one of "
                                             f"{', '.join(registry.MODELS)}, got {item!r}")
        runs[kind] = Path(folder)
    if not runs:
        raise argparse.ArgumentTypeError(f"expected MODEL=DIR items, got {text!r}")
    return runs


def main(args, out):
    device = check_device(args.device)
    rows = []
    if args.runs:
        for kind, run_dir in args.runs.items():
            config = read_config(run_dir)
            if config.settings.model != kind:
                raise TrainError(f"--runs {kind}={run_dir}: that run trained a {config.settings.model}")
            rows.append(summarize(run_dir, None, args, device))
        preset = rows[0]["preset"]
    else:
        data_dir = training.corpus_dir(args, out)
        for kind in args.models:
            trainer, seconds = training.train(kind, out / "runs" / kind, args, data_dir)
            at = trainer.progress
            epochs = at.epoch + at.batch_pos / len(trainer.batches(at.epoch))
            rows.append(summarize(trainer.run_dir, seconds, args, trainer.device, epochs))
            del trainer
        preset = args.preset
    data = {"preset": preset, "beam": args.beam, "models": rows}
    headers = ["model", "parameters", "epochs", "steps", "train time (s)", "wall time (s)", "target tokens/s",
               "val BLEU", "val BLEU (lc)", "test BLEU", "test BLEU (lc)", "test chrF"]
    table = [[r["model"], r["parameters"], r["epochs"], r["steps"], r["train_seconds"], r["wall_seconds"],
              r["tokens_per_s"], r["val"]["bleu"], r["val"]["bleu_lowercase"], r["test"]["bleu"],
              r["test"]["bleu_lowercase"], r["test"]["chrf"]] for r in rows]
    split = rows[0]["test"]["split"]
    text = (f"Preset `{preset}`, the same batches and schedule for every model; BLEU by sacreBLEU (13a, cased; "
            f"lc: lowercased) with beam {args.beam} on the `best` checkpoint (by greedy validation BLEU), test split "
            f"`{split}`; train time: the training steps alone; wall time: training plus the validation after each "
            f"epoch.\n\n" + results.markdown_table(headers, table))
    results.write(out, "compare", text, data)
    plot(rows, out / "compare.png")
    return 0


def test_split(data_dir, src, tgt, requested):
    """The split to report as test: --split, or the first of evaluate's defaults other than val."""
    present = corpus.available_splits(data_dir, src, tgt)
    if requested:
        if requested not in present:
            raise TrainError(f"--split {requested}: not in {data_dir} (it has {', '.join(present)})")
        return requested
    name = next((s for s in evaluate.DEFAULT_SPLITS if s != "val" and s in present), None)
    if name is None:
        raise TrainError(f"{data_dir} has no test split (it has {', '.join(present)}); pass --split")
    return name


def evaluation(run_dir, split, beam, device):
    """Run `evaluate` on a split of the run's corpus -> its record (bleu, bleu_lowercase, chrf, ...)."""
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    evaluate.main(parser.parse_args(["--run-dir", str(run_dir), "--split", split, "--beam", str(beam),
                                     "--device", device]))
    lines = (Path(run_dir) / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    return json.loads(lines[-1])


def training_time(records):
    """[(step, training seconds so far, target tokens so far)] after each train record of metrics.jsonl."""
    out, step, seconds, tokens = [], 0, 0.0, 0.0
    for r in records:
        if r["kind"] == "train":
            n = r["step"] - step
            seconds += r["s_per_step"] * n
            tokens += (r["tokens_per_s"] or 0.0) * r["s_per_step"] * n   # null: no time measured (s_per_step 0)
            step = r["step"]
            out.append((step, seconds, tokens))
    return out


def summarize(run_dir, wall_seconds, args, device, epochs=None):
    """One row of the table (a dict) for a trained run folder: size, budget, speed, BLEU by evaluate. Without
    `epochs`, they are counted from the run's records (steps / the steps of its first full epoch)."""
    config = read_config(run_dir)
    s = config.settings
    records = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    times = training_time(records)
    at_step = {step: seconds for step, seconds, _ in times}
    curve = [{"epoch": r["epoch"], "step": r["step"], "seconds": at_step[r["step"]], "val_bleu": r["val_bleu"]}
             for r in records if r["kind"] == "epoch" and r["step"] in at_step]
    split = test_split(s.data_dir, s.src, s.tgt, args.split)
    train_seconds, tokens = (times[-1][1], times[-1][2]) if times else (0.0, 0.0)
    n_params = config.build_model().num_parameters()
    steps = checkpoint.load(checkpoint.checkpoint_path(run_dir, "last"))["progress"]["step"]
    if epochs is None:
        full_epochs = [r["step"] for r in records if r["kind"] == "epoch" and not r["partial"]]
        epochs = steps / full_epochs[0] if full_epochs else None
    return {"model": s.model, "preset": s.preset, "run_dir": str(run_dir), "parameters": n_params,
            "epochs": epochs, "steps": steps,
            "train_seconds": train_seconds, "wall_seconds": wall_seconds,
            "tokens_per_s": tokens / train_seconds if train_seconds else None,
            "val_bleu_curve": curve,
            "val": evaluation(run_dir, "val", args.beam, device),
            "test": evaluation(run_dir, split, args.beam, device)}


def plot(rows, path):
    """Greedy validation BLEU after each epoch, against the step (left) and the training time (right)."""
    plt = results.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for r in rows:
        label = f"{r['model']} ({r['parameters'] / 1e6:.2f}M parameters)"
        for ax, x in zip(axes, ("step", "seconds")):
            ax.plot([c[x] for c in r["val_bleu_curve"]], [c["val_bleu"] for c in r["val_bleu_curve"]], "o-",
                    label=label)
    axes[0].set_xlabel("training step")
    axes[1].set_xlabel("training time (s, training steps only)")
    axes[0].set_ylabel("greedy validation BLEU")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("validation BLEU after each epoch")
    return results.save_figure(fig, path)
