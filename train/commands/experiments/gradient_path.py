"""gradient-path: how much the encoder's output at the last position depends on the input at each earlier position,
against their distance, for a Transformer encoder and an LSTM encoder of about the same size, at initialisation and
after training.

In an RNN, input j reaches output n-1 only through n-1-j recurrent steps, and its gradient is a product of that
many Jacobians: it shrinks (or grows) geometrically with the distance unless the cell learns to carry it. In
self-attention every position is one step from every other: the path has the same length at every distance.

Measured on windows of n tokens cut from the training corpus (consecutive source sentences, each ending with eos),
in eval mode (no dropout): for K random unit directions u, the gradient of u . h_{n-1} (the encoder's top-layer
output at the last position) with respect to each input vector x_j (the scaled token embedding). The curve is the
root mean square of |d(u . h_{n-1})/dx_j| over windows and directions, which is proportional to the Frobenius norm
of the Jacobian dh_{n-1}/dx_j. Fitted: the slope of log10(norm) against distance 1..n-1 (decades per 10 positions)
and the ratio of the norm at the farthest distance to that at distance 1.

The models are trained here with `fit` (the preset, corpus and budget flags are fit's), or taken from earlier runs
with --runs DIR (DIR/transformer and DIR/lstm, as `experiment compare` writes them); the model at initialisation is
rebuilt from a run's config with the run's seed, so it is the very model that training started from.
"""
from pathlib import Path

import numpy as np

import minitorch as mt
from minitorch import backend

from ...run import checkpoint, run_folder
from ...run.config import config_path, read_config
from ...data import corpus
from ...cli.arguments import check_device, positive_int
from ...cli.errors import TrainError, UsageError
from ...data.tokenizer import EOS_ID
from . import results, training
from .options import add_training_arguments

KINDS = ("transformer", "lstm")


def add_arguments(p):
    p.add_argument("--length", type=positive_int, default=64, help="positions n in a window (default 64)")
    p.add_argument("--windows", type=positive_int, default=8, help="windows (sentences of n tokens) averaged (8)")
    p.add_argument("--directions", type=positive_int, default=8, help="random output directions u averaged (8)")
    p.add_argument("--runs", help="use the trained runs DIR/transformer and DIR/lstm instead of training new ones "
                                  "(e.g. runs/experiments/compare/runs)")
    add_training_arguments(p, max_steps=200)


def main(args, out):
    device = check_device(args.device)
    if args.length < 2:
        raise UsageError("--length: a window needs at least 2 positions")
    data = {"length": args.length, "windows": args.windows, "directions": args.directions, "models": {}}
    run_dirs = trained_runs(args, out)
    for kind, run_dir in run_dirs.items():
        config = read_config(run_dir)
        if config.settings.model != kind:
            raise TrainError(f"{run_dir} holds a {config.settings.model} model, not {kind}")
        s = config.settings
        tok = run_folder.load_tokenizer(run_dir, s)
        n, max_len = args.length, config.model_config["max_len"]
        if n > max_len:
            raise TrainError(f"--length {n}: the {kind} model of {run_dir} takes at most max_len {max_len} tokens")
        src_lines = corpus.read_parallel(s.data_dir, "train", s.src, s.tgt)[0]
        windows = token_windows(tok.encode(src_lines), n, args.windows, seed=args.seed)
        mt.manual_seed(s.seed)  # as fit did right before building the model it trained
        initial = config.build_model().to(device).eval()
        trained = run_folder.load_model(run_dir, config, "last", device)
        step = run_step(run_dir)
        data["models"][kind] = {"run_dir": str(run_dir), "steps": step,
                                "parameters": trained.num_parameters()}
        for stage, model in (("initialisation", initial), (f"after {step} steps", trained)):
            norms = gradient_norms(model, backend.to_device(windows, device), args.directions, args.seed)
            data["models"][kind][stage] = summarize(norms)
            print(f"{kind}, {stage}: |grad| at distance 1 {norms[-2]:.3g}, at {n - 1} {norms[0]:.3g}", flush=True)
    write_report(data, out)
    plot(data, out / "gradient_path.png")
    return 0


def trained_runs(args, out):
    """{kind: run folder}: the runs in --runs, or new ones trained in out/runs."""
    if args.runs:
        dirs = {kind: Path(args.runs) / kind for kind in KINDS}
        for kind, d in dirs.items():
            if not config_path(d).is_file():
                raise TrainError(f"--runs {args.runs}: no {kind} run in {d}")
        return dirs
    data_dir = training.corpus_dir(args, out)
    return {kind: training.train(kind, out / "runs" / kind, args, data_dir)[0].run_dir for kind in KINDS}


def run_step(run_dir):
    """The training step a run's `last` checkpoint was saved at."""
    return int(checkpoint.load(checkpoint.checkpoint_path(run_dir, "last"))["progress"]["step"])


def token_windows(sentences, n, count, seed=0):
    """count windows (count, n) int64: runs of consecutive sentences (each + eos) from random starting sentences."""
    sentences = [s for s in sentences if s]
    if not sentences:
        raise TrainError("the training split has no sentences to cut windows from")
    rng = np.random.default_rng(seed)
    windows = np.empty((count, n), dtype=np.int64)
    for w in range(count):
        i, stream = int(rng.integers(len(sentences))), []
        while len(stream) < n:
            stream += list(sentences[i % len(sentences)]) + [EOS_ID]
            i += 1
        windows[w] = stream[:n]
    return windows


def encoder_output(model, x, ids):
    """The encoder's top-layer outputs (B, n, d) for input vectors x (B, n, d_embed) of the tokens ids (B, n)."""
    if hasattr(model, "src_pos"):  # a Transformer: add the positions, self-attention over the whole window
        from transformer.masks import padding_mask
        return model.encoder(model.src_pos(x), padding_mask(ids, model.cfg.pad_id))
    return model.encoder(x)[0]      # an LSTM encoder, read left to right


def gradient_norms(model, windows, directions, seed=0):
    """(n,) RMS over windows and random unit directions u of |d(u . h_{n-1}) / dx_j| for each position j."""
    xp = backend.xp_of(windows)
    ids = xp.concatenate([windows] * directions)                     # (K B, n): each window once per direction
    with mt.no_grad():
        embedded = model.src_embed(ids).data
    x = mt.tensor(embedded, requires_grad=True)
    h = encoder_output(model, x, ids)[:, -1]                            # (K B, d)
    u = np.random.default_rng(seed).standard_normal((directions, h.shape[-1]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    u = np.repeat(u, windows.shape[0], axis=0).astype(embedded.dtype)   # direction k for every window
    (h * mt.tensor(backend.to_device(u, backend.device_of(embedded)))).sum().backward()
    g = backend.to_numpy(x.grad.data).astype(np.float64)
    return np.sqrt((g ** 2).sum(axis=-1).mean(axis=0))


def summarize(norms):
    """A curve (n,) by position -> norms by distance (index 0 = the last position itself) and fitted figures."""
    by_distance = np.asarray(norms)[::-1]
    d = np.arange(1, len(by_distance))
    slope = float(np.polyfit(d, np.log10(by_distance[1:]), 1)[0]) if len(d) >= 2 else float("nan")
    return {"norm_by_distance": by_distance.tolist(), "decades_per_10_positions": 10 * slope,
            "far_over_near": float(by_distance[-1] / by_distance[1]) if len(by_distance) > 1 else float("nan")}


def write_report(data, out):
    n = data["length"]
    marks = sorted({d for d in (0, 1, 2, 4, 8, 16, 32, 64, 128, n - 1) if d < n})
    rows = []
    for kind, m in data["models"].items():
        for stage, s in m.items():
            if isinstance(s, dict):
                rows.append([kind, stage, m["parameters"]] + [s["norm_by_distance"][d] for d in marks]
                            + [s["decades_per_10_positions"], s["far_over_near"]])
    text = (f"Norm of d(encoder output at the last position)/d(input at distance d), RMS over {data['windows']} "
            f"windows of {n} tokens and {data['directions']} output directions; slope: fitted log10(norm) per 10 "
            f"positions of distance; far/near: norm at distance {n - 1} / norm at distance 1.\n\n"
            + results.markdown_table(["model", "stage", "parameters"] + [f"d={d}" for d in marks]
                                     + ["slope (decades/10 pos.)", "far/near"], rows, digits=3))
    results.write(out, "gradient_path", text, data)


def plot(data, path):
    plt = results.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for color, (kind, m) in zip(("tab:blue", "tab:orange"), data["models"].items()):
        for stage, s in m.items():
            if isinstance(s, dict):
                y = np.asarray(s["norm_by_distance"])
                ax.semilogy(np.arange(len(y)), y, "--" if stage == "initialisation" else "-", color=color,
                            label=f"{kind}, {stage} ({s['decades_per_10_positions']:+.2f} decades / 10 positions)")
    ax.set_xlabel("distance from the last position (n - 1 - j)")
    ax.set_ylabel("|d h_last / d x_j|  (RMS over windows and directions)")
    ax.set_title(f"gradient path: encoder output at the last of {data['length']} positions")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return results.save_figure(fig, path)
