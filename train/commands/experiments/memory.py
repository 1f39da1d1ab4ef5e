"""memory: bytes saved for backward and peak memory of one training step against sequence length, and the fitted
growth exponent k in memory ~ n^k.

Self-attention keeps an n x n matrix of weights per head and layer for its backward pass, so a Transformer's memory
grows as n^2 once n is long enough; an LSTM keeps a few vectors per position and layer, so its memory grows as n.
Each model takes one training step (forward, label-smoothed cross-entropy, backward) on a batch of random token ids
whose source and target are both n tokens long, with the preset's sizes (max_len raised to fit the longest n):

    saved for backward   the arrays that the graph's Functions keep for backward (minitorch.tools.graph_memory)
    peak                 the most memory allocated at once during the step above what was in use before it
                         (tracemalloc on the CPU, which sees NumPy's buffers; CuPy's memory pool on the GPU)

k is the least-squares slope of log(memory) against log(n) over the longer half of the lengths: at short lengths
the parts that do not grow with n (the parameters' gradients, for one) hide the growth. The saved bytes are also fitted
exactly as a + b n + c n^2 (least squares; with three or more lengths): c is the part that grows as n^2 (for a
Transformer, the attention matrices), reported in bytes and as its share of the total at the longest n.
"""
import gc
import time
import tracemalloc

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import backend
from minitorch.tools.graph_memory import saved_bytes
from transformer import registry

from ...cli.arguments import check_device, add_device_argument, non_negative_int, positive_int
from ...cli.errors import TrainError
from ...run.presets import PRESETS
from ...data.tokenizer import PAD_ID
from . import results
from .options import choice_list, int_list

MB = 2 ** 20


def add_arguments(p):
    p.add_argument("--lengths", type=int_list, default=[16, 32, 64, 128, 256, 512],
                   help="sequence lengths n, comma-separated (default: 16,32,64,128,256,512)")
    p.add_argument("--models", type=choice_list(*registry.MODELS), default=["transformer", "lstm"],
                   help=f"comma-separated, of {', '.join(registry.MODELS)} (default: transformer,lstm)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="demo",
                   help="whose model sizes and vocabulary size (default: demo, d_model 64)")
    p.add_argument("--batch-size", type=positive_int, default=4, help="sentences in the batch (default 4)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of weights and token ids (default 0)")
    add_device_argument(p)


def main(args, out):
    device = check_device(args.device)
    lengths = sorted(set(args.lengths))
    if len(lengths) < 2:
        raise TrainError("--lengths: give at least two lengths to fit a growth exponent")
    preset = PRESETS[args.preset]
    data = {"preset": preset.name, "batch_size": args.batch_size, "device": device, "models": {}}
    for kind in args.models:
        measure_step(kind, preset, lengths[0], args.batch_size, args.seed, device)   # untimed: a first step's one-time
        points = []                                                                   # allocations are no length's
        for n in lengths:
            m = measure_step(kind, preset, n, args.batch_size, args.seed, device)
            points.append(m)
            print(f"{kind:12s} n={n:4d}: saved for backward {m['saved_bytes'] / MB:9.2f} MB, peak "
                  f"{m['peak_bytes'] / MB:9.2f} MB ({m['seconds']:.1f} s)", flush=True)
        saved = [p["saved_bytes"] for p in points]
        peak = [p["peak_bytes"] for p in points]
        data["models"][kind] = {"parameters": points[0]["parameters"], "points": points,
                                "exponent_saved": growth_exponent(lengths, saved),
                                "exponent_peak": growth_exponent(lengths, peak),
                                "local_exponents_saved": local_exponents(lengths, saved),
                                "local_exponents_peak": local_exponents(lengths, peak),
                                "quadratic_fit_saved": quadratic_fit(lengths, saved) if len(lengths) > 2 else None}
    data["lengths"] = lengths
    report(data, out)
    plot(data, lengths, out / "memory.png")
    return 0


def report(data, out):
    """Write memory.md (three tables) and memory.json from the measurements."""
    lengths, rows = data["lengths"], []
    for kind, d in data["models"].items():
        fit = d["quadratic_fit_saved"] or {"c": None, "share_at_longest": None}
        # rounded: a fit of exactly linear data gives c of about 1e-12, shown as 0 and not as "-1e-12"
        c, share = (None, None) if fit["c"] is None else (round(fit["c"], 2) + 0.0,
                                                          round(fit["share_at_longest"], 3) + 0.0)
        rows.append([kind, d["parameters"], d["exponent_saved"], d["exponent_peak"], c, share]
                    + [p["saved_bytes"] / MB for p in d["points"]])
    text = (f"One training step, batch of {data['batch_size']}, source and target n tokens, `{data['preset']}` "
            f"sizes; memory in MB saved for backward at each n; k: fitted exponent of memory ~ n^k over the longer "
            f"half of the lengths; c: bytes per n^2 in the fit a + b n + c n^2 of the saved bytes, and the share of "
            f"c n^2 in them at n={lengths[-1]}.\n\n"
            + results.markdown_table(["model", "parameters", "k (saved)", "k (peak)", "c (bytes)",
                                      f"n^2 share at {lengths[-1]}"] + [f"n={n}" for n in lengths], rows))
    text += "\nPeak memory of the step (MB, above what was in use before it):\n\n" + results.markdown_table(
        ["model"] + [f"n={n}" for n in lengths],
        [[kind] + [p["peak_bytes"] / MB for p in d["points"]] for kind, d in data["models"].items()])
    text += "\nLocal growth exponent of the memory saved for backward between consecutive lengths:\n\n" + \
        results.markdown_table(["model"] + [f"{a}->{b}" for a, b in zip(lengths, lengths[1:])],
                               [[kind] + d["local_exponents_saved"] for kind, d in data["models"].items()])
    results.write(out, "memory", text, data)


def random_batch(rng, batch_size, n, vocab_size):
    """(src, tgt_in, tgt_out), each (B, n) int64 ids of ordinary tokens (no padding)."""
    return tuple(rng.integers(4, vocab_size, size=(batch_size, n), dtype=np.int64) for _ in range(3))


def measure_step(kind, preset, n, batch_size, seed, device):
    """One training step of a fresh `kind` model on (B, n) sequences -> {n, saved_bytes, peak_bytes, parameters,
    seconds, loss}."""
    sizes = dict(preset.sizes(kind), max_len=max(preset.sizes(kind)["max_len"], n + 1))
    mt.manual_seed(seed)
    model = registry.new_model(kind, preset.vocab_size, sizes).to(device).train()
    src, tgt_in, tgt_out = (backend.to_device(a, device) for a in
                            random_batch(np.random.default_rng(seed), batch_size, n, preset.vocab_size))
    gc.collect()
    on_gpu = device == "cuda"
    if on_gpu:
        before = backend.device_memory(device, release=True)[0]
    else:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    try:
        loss = F.cross_entropy(model(src, tgt_in), tgt_out, ignore_index=PAD_ID, label_smoothing=0.1)
        saved = saved_bytes(loss)
        loss.backward()
        backend.synchronize(device) if on_gpu else None
        peak = backend.device_memory(device)[1] - before if on_gpu else tracemalloc.get_traced_memory()[1] - before
    finally:
        if not on_gpu:
            tracemalloc.stop()
    return {"n": n, "saved_bytes": int(saved), "peak_bytes": int(peak), "loss": float(loss.item()),
            "parameters": model.num_parameters(), "seconds": time.perf_counter() - start}


def growth_exponent(lengths, values):
    """k of values ~ c n^k: the least-squares slope of log(values) on log(lengths) over the longer half of the
    lengths (at least the two longest)."""
    n, v = np.asarray(lengths, dtype=np.float64), np.asarray(values, dtype=np.float64)
    order = np.argsort(n)
    keep = order[min(len(order) // 2, len(order) - 2):]
    return float(np.polyfit(np.log(n[keep]), np.log(v[keep]), 1)[0])


def quadratic_fit(lengths, values):
    """{a, b, c, share_at_longest} of the least-squares fit values ~ a + b n + c n^2 (three or more lengths);
    share_at_longest: c n^2 / value at the longest n."""
    n, v = np.asarray(lengths, dtype=np.float64), np.asarray(values, dtype=np.float64)
    (a, b, c), *_ = np.linalg.lstsq(np.stack([np.ones_like(n), n, n * n], axis=1), v, rcond=None)
    longest = int(np.argmax(n))
    share = float(c * n[longest] ** 2 / v[longest]) if v[longest] else float("nan")
    return {"a": float(a), "b": float(b), "c": float(c), "share_at_longest": share}


def local_exponents(lengths, values):
    """log(v_i / v_{i-1}) / log(n_i / n_{i-1}) between consecutive lengths (len(lengths) - 1 values)."""
    n, v = np.log(np.asarray(lengths, dtype=np.float64)), np.log(np.asarray(values, dtype=np.float64))
    return (np.diff(v) / np.diff(n)).tolist()


def one_two_five(value, _position):
    """A log axis label for 1, 2 and 5 times a power of ten, none for the other ticks."""
    return f"{value:g}" if value > 0 and f"{value:e}"[0] in "125" else ""


def plot(data, lengths, path):
    """Two log-log panels, saved-for-backward and peak memory against n, with n and n^2 reference slopes."""
    plt = results.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    n = np.asarray(lengths, dtype=np.float64)
    from matplotlib.ticker import FuncFormatter, NullFormatter
    for ax, key, title in ((axes[0], "saved_bytes", "memory saved for backward"),
                           (axes[1], "peak_bytes", "peak memory of the step")):
        top = []
        for kind, d in data["models"].items():
            mb = np.array([p[key] for p in d["points"]]) / MB
            k = d["exponent_saved" if key == "saved_bytes" else "exponent_peak"]
            ax.loglog(n, mb, "o-", label=f"{kind} (k = {k:.2f})")
            top.append(mb[-1])
        anchor = max(top)
        for power, style in ((1, ":"), (2, "--")):
            ax.loglog(n, anchor * (n / n[-1]) ** power, style, color="gray", lw=1, label=f"~ n^{power}")
        ax.set_xticks(n, [str(int(x)) for x in n])
        ax.xaxis.set_minor_formatter(NullFormatter())
        for axis in ("major", "minor"):
            getattr(ax.yaxis, f"set_{axis}_formatter")(FuncFormatter(one_two_five))
        ax.set_xlabel("sequence length n (source = target)")
        ax.set_ylabel("MB")
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle(f"one training step, batch {data['batch_size']}, {data['preset']} sizes ({data['device']})")
    return results.save_figure(fig, path)
