"""plot: PNG figures of a run: loss and BLEU curves, cross-attention maps, the positional-encoding raster.

    curves.png               training loss by step, validation loss and greedy validation BLEU by epoch
    attention.png            the cross-attention of each decoder layer (rows) and head (columns) while the model
                             translates one sentence: target tokens down, source tokens across
    positional_encoding.png  the position vectors added to the embeddings: positions down, dimensions across

The LSTM models (fit --model lstm / lstm-attn) have no positional encoding, and `lstm` has no attention either (its
decoder starts from the encoder's final state); their figures are left out, with a line saying so. lstm-attn's map
is its one additive-attention distribution per output token.
"""
import json
from pathlib import Path

import numpy as np

from ..run import run_folder
from ..run.config import read_config
from ..evaluation.arguments import CHECKPOINT_HELP, decoding
from ..data.batching import pad, source_batch
from ..run.checkpoint import CHECKPOINTS
from ..data.corpus import read_parallel, recorded_folder
from ..evaluation.decode import translate_ids
from ..cli.errors import TrainError, UsageError
from ..cli.prog import PROG
from ..data.tokenizer import BOS_ID


def add_arguments(p):
    p.add_argument("--run-dir", required=True, help=f"a run folder made by `{PROG} fit`")
    p.add_argument("--sentence", help="the source sentence of the attention maps (default: the first validation "
                                      "sentence)")
    p.add_argument("--checkpoint", choices=CHECKPOINTS, help=CHECKPOINT_HELP)
    p.add_argument("--positions", type=int, default=100, help="positions shown in the positional-encoding raster")


def main(args):
    import matplotlib
    matplotlib.use("Agg")  # files only, no window: works on a machine without a display
    run_dir = Path(args.run_dir)
    config = read_config(run_dir)
    records = read_metrics(run_dir / "metrics.jsonl")
    written = [plot_curves(records, run_dir / "curves.png")]
    tokenizer = run_folder.load_tokenizer(run_dir, config.settings)
    name = run_folder.checkpoint_name(run_dir, args.checkpoint, preferred=decoding(config.settings, args)["checkpoint"])
    model = run_folder.load_model(run_dir, config, name)
    sentence = args.sentence
    if sentence is None:
        s = config.settings
        sentence = read_parallel(recorded_folder(s, run_dir, "--sentence"), "val", s.src, s.tgt)[0][0]
    kind = config.settings.model
    if hasattr(model, "cross_attention"):
        written.append(plot_attention(model, tokenizer, sentence, run_dir / "attention.png"))
    else:
        print(f"no attention.png: the {kind} model has no attention (its decoder starts from the encoder's state)")
    if hasattr(model, "src_pos"):
        written.append(plot_positional_encoding(model, args.positions, run_dir / "positional_encoding.png"))
    else:
        print(f"no positional_encoding.png: the {kind} model has none (a recurrent network reads tokens in order)")
    for path in written:
        print(path)
    return 0


def read_metrics(path):
    if not Path(path).is_file():
        raise TrainError(f"{path}: not found; is this a run folder made by `{PROG} fit`?")
    records = []
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines) and not text.endswith("\n"):
                break   # a record that a training run is appending right now, not yet whole: left for next time
            raise TrainError(f"{path}, line {n}: not JSON") from None
    return records


def plot_curves(records, path):
    """Write curves_figure(records) to path."""
    import matplotlib.pyplot as plt
    fig = curves_figure(records)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def curves_figure(records):
    """Two panels: losses against steps, BLEU and chrF against steps (epoch ends marked)."""
    import matplotlib.pyplot as plt
    train = [r for r in records if r["kind"] == "train"]
    epochs = [r for r in records if r["kind"] == "epoch"]
    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
    if train:
        ax_loss.plot([r["step"] for r in train], [r["loss"] for r in train], lw=1, alpha=0.8,
                     marker="o" if len(train) == 1 else None,   # a line of one point draws nothing
                     label="training loss (label-smoothed)")
    else:
        ax_loss.text(0.5, 0.5, "no training record yet", ha="center", va="center", transform=ax_loss.transAxes)
    if epochs:
        steps = [r["step"] for r in epochs]
        ax_loss.plot(steps, [r["val_loss"] for r in epochs], "o-", label="validation loss (label-smoothed)")
        ax_loss.plot(steps, [r["val_nll"] for r in epochs], "s--", label="validation NLL")
        ax_bleu.plot(steps, [r["val_bleu"] for r in epochs], "o-", color="tab:green", label="BLEU")
        ax_bleu.plot(steps, [r["val_chrf"] for r in epochs], "s--", color="tab:olive", label="chrF")
        for r in epochs:
            # the label goes on the side of the BLEU point away from the chrF point, which is usually just above
            below = r["val_chrf"] >= r["val_bleu"]
            ax_bleu.annotate(f"{r['val_bleu']:.1f}", (r["step"], r["val_bleu"]), textcoords="offset points",
                             xytext=(0, -7 if below else 7), ha="center", va="top" if below else "bottom",
                             fontsize=8)
        ax_bleu.margins(y=0.1)   # room for a label below the lowest point
        ax_bleu.set_title(f"greedy validation scores ({epochs[-1]['val_bleu_sentences']} sentences)")
    else:
        ax_bleu.text(0.5, 0.5, "no epoch finished yet", ha="center", va="center", transform=ax_bleu.transAxes)
        ax_bleu.set_title("greedy validation scores")
    ax_loss.set_title("loss (nats per target token)")
    for ax, label in ((ax_loss, "loss"), (ax_bleu, "score")):
        ax.set_xlabel("training step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:   # an empty legend is a matplotlib warning
            ax.legend()
    return fig


def plot_attention(model, tokenizer, sentence, path):
    """Write attention_figure(model, tokenizer, sentence) to path."""
    import matplotlib.pyplot as plt
    fig = attention_figure(model, tokenizer, sentence)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def attention_figure(model, tokenizer, sentence):
    """A grid of heatmaps (decoder layers x heads) of the cross-attention while the model writes its translation,
    with one colour bar for all (the weights are probabilities, on one scale from 0 to 1)."""
    import matplotlib.pyplot as plt
    src_ids = tokenizer.encode([sentence])[0]
    if not src_ids:
        raise UsageError("--sentence is empty")
    hyp = translate_ids(model, [src_ids], beam=1)[0]
    src = source_batch([src_ids])
    weights = model.cross_attention(src, pad([hyp], prefix=(BOS_ID,)))
    src_labels = tokenizer.pieces(src_ids) + ["</s>"]
    tgt_labels = tokenizer.pieces(hyp) + ["</s>"]   # row t: attention while predicting output token t
    n_layers, n_heads = len(weights), weights[0].shape[1]
    cell = 0.22
    w, h = max(2.0, cell * len(src_labels) + 0.8), max(2.0, cell * len(tgt_labels) + 0.8)
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(w * n_heads + 1.2, h * n_layers + 0.8), squeeze=False,
                             layout="constrained")
    for layer, layer_weights in enumerate(weights):
        for head in range(n_heads):
            ax = axes[layer, head]
            image = ax.imshow(layer_weights[0, head], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
            ax.set_xticks(range(len(src_labels)), src_labels, rotation=90, fontsize=7)
            ax.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
    fig.colorbar(image, ax=axes, label="attention weight")
    fig.suptitle(f"cross-attention: {sentence}\n-> {tokenizer.decode([hyp])[0]}", fontsize=10)
    return fig


def positional_table(model, n_positions):
    """(n_positions, d_model): the position vectors the encoder adds (learned or sinusoidal)."""
    pos = model.src_pos
    n = min(n_positions, pos.max_len)
    if pos.table is not None:
        return pos.table.numpy()[:n], "learned"
    from transformer.layers import sinusoidal_table
    return np.asarray(sinusoidal_table(pos.max_len, pos.d_model))[:n], "sinusoidal"


def plot_positional_encoding(model, n_positions, path):
    import matplotlib.pyplot as plt
    table, kind = positional_table(model, n_positions)
    fig, ax = plt.subplots(figsize=(10, 5))
    image = ax.imshow(table, cmap="RdBu", aspect="auto", vmin=-np.abs(table).max(), vmax=np.abs(table).max(),
                      interpolation="nearest")
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    ax.set_title(f"{kind} positional encoding ({table.shape[0]} positions x d_model {table.shape[1]})")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
