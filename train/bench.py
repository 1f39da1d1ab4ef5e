"""bench: time training steps or decoding of a preset's model on synthetic batches, and find where a step's time goes.

Train mode times full training steps (forward, loss, backward, clipping, Adam, schedule: what `fit` does each step)
on a synthetic batch of the preset's shape, after warm-up steps, and prints the median and minimum step time, target
tokens per second, peak memory, bytes saved for backward, and the fraction of this machine's float32 matrix-product
peak that the step reaches (the peak measured here, by timing one large matmul). `--profile` then runs more steps
with every op timed and splits a step into matmul, fused ops, elementwise/shape ops, clipping, the optimizer and
Python overhead (everything else: autograd bookkeeping, modules, graph walk), so that the next optimisation is chosen
by measurement.

Decode mode times beam search (beam 5) and greedy decoding with the key/value cache, as `evaluate` runs them, on a
freshly initialised model: such a model rarely emits eos, so each sentence runs to its length limit (1.5 x source
length + 10), the slowest case; the output tokens per second carry over to real lengths.

The batches are random token ids from a seeded generator: no corpus, tokenizer or --run-dir is needed. Figures
only: compare runs made alternately in one time window, since a shared machine is noisy. The BLAS thread count is
printed; set it with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS.
"""
import json
import math
import os
import resource
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import backend
from minitorch.autograd import Function
from minitorch.graph_memory import saved_bytes
from minitorch.ops import MatMul

from . import run
from .arguments import add_device_argument, non_negative_int, positive_int
from .batching import training_batch
from .errors import TrainError
from .presets import PRESETS, noam_factor
from .tokenizer import PAD_ID

SEQ_LEN = 32             # tokens a side in the synthetic batch, eos/bos included (Multi30k's long sentences)
PADDING = 0.1            # about this fraction of each side is padding
PEAK_N, PEAK_REPS = 2048, 5   # the matmul that measures the machine's peak: (n, n) @ (n, n), best of reps
BEAM = 5


def add_arguments(p):
    p.add_argument("--preset", required=True, choices=sorted(PRESETS),
                   help="the model (and batch size) to time: " + "; ".join(
                       f"{name}: {preset.description}" for name, preset in PRESETS.items()))
    p.add_argument("--mode", choices=("train", "decode"), default="train",
                   help="train: time training steps (default); decode: time beam search and greedy decoding")
    add_device_argument(p)
    p.add_argument("--steps", type=positive_int,
                   help="timed training steps (default 10), or timed repetitions of decoding (default 1)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=2,
                   help="untimed steps first (default 2)")
    p.add_argument("--batch-size", type=positive_int,
                   help=f"sentences a batch (default: the preset's batch tokens / {SEQ_LEN}; 128 for small)")
    p.add_argument("--seq-len", type=positive_int, default=SEQ_LEN,
                   help=f"padded tokens a side, eos/bos included (default {SEQ_LEN}); about "
                        f"{round(100 * PADDING)}%% of them are padding")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the batch, weights and dropout")
    p.add_argument("--profile", action="store_true",
                   help="train mode: afterwards run --steps more steps with every op timed, and print where a step's "
                        "time goes by op kind and by op")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")


def main(args):
    device = run.check_device(args.device)
    preset = PRESETS[args.preset]
    batch_size = args.batch_size or max(preset.batch_tokens // args.seq_len, 1)
    if args.seq_len < 2:
        raise TrainError(f"--seq-len {args.seq_len}: needs at least 2 (one token and eos)")
    if args.seq_len > preset.model["max_len"]:
        raise TrainError(f"--seq-len {args.seq_len} is longer than the {preset.name} model's max_len "
                         f"{preset.model['max_len']}")
    if args.profile and args.mode != "train":
        raise TrainError("--profile times the ops of training steps; drop it with --mode decode")
    if args.mode == "train":
        result = bench_train(preset, device, batch_size, args.seq_len, args.steps or 10, args.warmup_steps,
                             args.seed, args.profile, progress=not args.json)
    else:
        result = bench_decode(preset, device, batch_size, args.seq_len, args.steps or 1, args.seed,
                              progress=not args.json)
    if args.json:
        print(json.dumps(result))
    else:
        print_result(result)
    return 0


# ----- the batch, the model, the step -----
def synthetic_batch(batch_size, seq_len, vocab_size, seed):
    """(src ids list, tgt ids list) of random ids in [4, vocab): lengths spread so that about PADDING of each padded
    side (seq_len, with eos/bos) is padding; the first sentence has the full length."""
    rng = np.random.default_rng(seed)
    shortest = max(1, round((1 - 2 * PADDING) * seq_len))
    lengths = rng.integers(shortest, seq_len + 1, size=(2, batch_size))   # with eos/bos; mean about 0.9 seq_len
    lengths[:, 0] = seq_len
    low = min(4, vocab_size - 1)                                          # past pad, unk, bos, eos where they exist
    src, tgt = ([rng.integers(low, vocab_size, size=n - 1).tolist() for n in side] for side in lengths)
    return src, tgt


def build_model(preset, device, seed):
    """A freshly initialised Transformer of the preset's configuration (vocabulary: the preset's size)."""
    mt.manual_seed(seed)
    model_config = dict(preset.model, vocab_size=preset.vocab_size)
    return run.build_model({"settings": {"model": "transformer"}, "model_config": model_config}).to(device)


class TrainStep:
    """The training step of `fit` (Trainer.train_step) without its bookkeeping: the same loss, clipping, optimizer and
    schedule, on one fixed batch. Calling it returns the loss and the time at each phase boundary."""

    def __init__(self, preset, model, batch, device):
        self.model, self.device = model.train(), device
        self.batch = batch                                                 # host arrays, moved each step as fit does
        self.label_smoothing, self.clip_norm = preset.label_smoothing, preset.clip_norm
        d_model = preset.model["d_model"]
        self.optimizer = mt.optim.Adam(model.parameters(), lr=preset.lr, betas=(0.9, 0.98), eps=1e-9)
        self.schedule = mt.optim.WarmupSchedule(self.optimizer, d_model, preset.warmup,
                                                noam_factor(preset.lr, d_model, preset.warmup))
        self.saved = None

    def __call__(self, measure_saved=False, sync_phases=False):
        """One update -> (loss, [start, after forward+loss, after backward, after clipping, end])."""
        def mark():
            if sync_phases:
                backend.synchronize(self.device)
            marks.append(time.perf_counter())

        marks = [time.perf_counter()]
        src, tgt_in, tgt_out = (backend.to_device(a, self.device) for a in self.batch)
        logits = self.model(src, tgt_in)
        loss = F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, label_smoothing=self.label_smoothing)
        mark()
        if measure_saved:
            walk = time.perf_counter()
            self.saved = saved_bytes(loss)
            walk = time.perf_counter() - walk
            marks = [m + walk for m in marks]  # the graph walk is the bench's, not the step's
        self.optimizer.zero_grad()
        loss.backward()
        mark()
        mt.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        mark()
        self.optimizer.step()
        self.schedule.step()
        value = float(loss.item())                                         # waits for the device, as fit does
        marks.append(time.perf_counter())
        if not math.isfinite(value):
            raise TrainError(f"the loss became {value} during the benchmark")
        return value, marks


# ----- the machine -----
def matmul_peak_gflops(device, n=PEAK_N, reps=PEAK_REPS):
    """float32 GFLOP/s of the best of `reps` (n, n) @ (n, n) products: the machine's matrix-product peak."""
    xp = backend.xp_of_device(device)
    a, b = (backend.to_device(np.random.default_rng(i).standard_normal((n, n), dtype=np.float32), device)
            for i in (1, 2))
    out = a @ b   # warm-up: threads started, pages touched
    best = math.inf
    for _ in range(reps):
        backend.synchronize(device)
        start = time.perf_counter()
        xp.matmul(a, b, out=out)
        backend.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def step_matmul_flops(cfg, B, S, T):
    """FLOPs of the matrix products in one training step of a Transformer on a (B, S) -> (B, T) padded batch:
    forward F (2 per multiply-add: projections, FFN, q k^T, weights @ v, output logits) plus 2F for the backward
    (a product for each operand's gradient)."""
    d, f, V = cfg["d_model"], cfg["d_ff"], cfg["vocab_size"]
    encoder = 2 * B * S * (4 * d * d + 2 * d * f) + 2 * 2 * B * S * S * d          # qkv + out, FFN; attention
    decoder = (2 * B * T * (6 * d * d + 2 * d * f)    # self qkv + out, cross q + out, FFN
               + 2 * B * S * 2 * d * d                # cross-attention keys and values from the memory
               + 2 * 2 * B * T * T * d + 2 * 2 * B * T * S * d)                     # self- and cross-attention
    forward = cfg["n_encoder_layers"] * encoder + cfg["n_decoder_layers"] * decoder + 2 * B * T * d * V
    return 3 * forward


def blas_threads():
    """{library: threads} from threadpoolctl when it is installed, else the thread environment variables."""
    try:
        from threadpoolctl import threadpool_info
        return {f"{i['internal_api']}": i["num_threads"] for i in threadpool_info()}
    except ImportError:
        names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        return {name: os.environ.get(name, "unset") for name in names}


class HostMemory:
    """Resident memory of this process (Linux /proc; peak_rss also elsewhere through getrusage)."""

    @staticmethod
    def peak_rss():
        """Bytes: the process's peak resident set since it started."""
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib if sys.platform == "darwin" else kib * 1024   # macOS reports bytes, Linux KiB

    @staticmethod
    def _status(field):
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def rss(self):
        return self._status("VmRSS")

    def reset_peak(self):
        """Restart the kernel's peak-RSS mark (VmHWM); False where that is not possible."""
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def peak_since_reset(self):
        return self._status("VmHWM")


# ----- op-kind profile -----
def kind_of(cls):
    """matmul, fused (the hand-written fused ops) or elementwise/shape (the other primitive ops)."""
    if issubclass(cls, MatMul):
        return "matmul"
    if cls.__module__.startswith("minitorch.fused"):
        return "fused"
    return "elementwise/shape"


def _function_classes():
    found, todo = [], [Function]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


class OpProfiler:
    """While active, times every Function's forward and backward (the array work of each op), per op class.

    The methods are replaced on the classes and put back on exit. An op called inside another op's forward or
    backward counts as part of the outer one. The time of Function.apply's own bookkeeping (checks, making the
    output Tensor, recording the graph) stays outside the ops: it is part of the Python overhead. MatMul's FLOPs are
    counted from its shapes.
    """

    def __init__(self, device):
        self.device = device
        self.seconds = defaultdict(float)   # (class, "forward" | "backward") -> seconds
        self.calls = defaultdict(int)
        self.matmul_flops = 0
        self._depth = 0
        self._saved = []

    def __enter__(self):
        for cls in _function_classes():
            for name in ("forward", "backward"):
                if name in cls.__dict__:
                    self._saved.append((cls, name, cls.__dict__[name]))
                    setattr(cls, name, self._timed(name, cls.__dict__[name]))
        return self

    def __exit__(self, *exc):
        for cls, name, method in self._saved:
            setattr(cls, name, method)
        self._saved = []

    def _timed(self, name, method):
        profiler = self

        def timed(ctx, *args, **kwargs):
            if profiler._depth:
                return method(ctx, *args, **kwargs)
            profiler._depth += 1
            start = time.perf_counter()
            try:
                out = method(ctx, *args, **kwargs)
                backend.synchronize(profiler.device)
            finally:
                profiler._depth -= 1
            key = (type(ctx), name)
            profiler.seconds[key] += time.perf_counter() - start
            profiler.calls[key] += 1
            if isinstance(ctx, MatMul):
                profiler.matmul_flops += profiler._matmul_flops(ctx, name, args, out)
            return out
        return timed

    @staticmethod
    def _matmul_flops(ctx, name, args, out):
        k = ctx.a.shape[-1]
        if name == "forward":
            return 2 * out.size * k
        g = args[0]
        return 2 * g.size * k * sum(bool(n) for n in ctx.needs_input_grad)


def profile_steps(step, device, n_steps):
    """Run n_steps steps under an OpProfiler -> the per-step breakdown: by kind (rows of the table) and by op."""
    phases = np.zeros(4)
    with OpProfiler(device) as prof:
        for _ in range(n_steps):
            _, marks = step(sync_phases=True)
            phases += np.diff(marks)
    total = phases.sum() / n_steps
    forward, backward, clip, optim = phases / n_steps
    by_kind = defaultdict(float)
    by_op = []
    for (cls, name), seconds in prof.seconds.items():
        by_kind[kind_of(cls)] += seconds / n_steps
    for cls in {cls for cls, _ in prof.seconds}:
        fwd, bwd = (prof.seconds.get((cls, name), 0.0) / n_steps for name in ("forward", "backward"))
        calls = prof.calls.get((cls, "forward"), 0) / n_steps
        by_op.append({"op": cls.__name__, "kind": kind_of(cls), "calls": calls, "forward_ms": 1e3 * fwd,
                      "backward_ms": 1e3 * bwd, "percent": 100 * (fwd + bwd) / total})
    by_op.sort(key=lambda r: -(r["forward_ms"] + r["backward_ms"]))
    ops = sum(by_kind.values())
    rows = [(kind, by_kind.get(kind, 0.0)) for kind in ("matmul", "fused", "elementwise/shape")]
    rows += [("clipping", clip), ("optimizer (Adam, schedule)", optim), ("Python overhead", total - ops - clip - optim)]
    matmul_s = by_kind.get("matmul", 0.0)
    return {"steps": n_steps, "step_ms": 1e3 * total,
            "phases_ms": {"forward_loss": 1e3 * forward, "backward": 1e3 * backward, "clipping": 1e3 * clip,
                          "optimizer": 1e3 * optim},
            "kinds": [{"kind": k, "ms": 1e3 * s, "percent": 100 * s / total} for k, s in rows],
            "ops": by_op,
            "matmul_op_gflops": prof.matmul_flops / n_steps / matmul_s / 1e9 if matmul_s else 0.0}


# ----- the two modes -----
def bench_train(preset, device, batch_size, seq_len, steps, warmup_steps, seed, profile, progress=True):
    """Time `steps` training steps after `warmup_steps` -> a dict of figures (see print_result)."""
    say = _progress(progress)
    memory = HostMemory()
    src_ids, tgt_ids = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    batch = training_batch(src_ids, tgt_ids)
    model = build_model(preset, device, seed)
    step = TrainStep(preset, model, batch, device)
    say(f"{warmup_steps} warm-up step(s), then {steps} timed: {preset.name}, batch {batch[0].shape} -> "
        f"{batch[1].shape}, {device}")
    for i in range(warmup_steps):
        step(measure_saved=i == 0)
    backend.device_memory(device, release=True)
    rss_before, peak_reset = memory.rss(), memory.reset_peak()
    times, losses = [], []
    for _ in range(steps):
        loss, marks = step(measure_saved=step.saved is None)   # without warm-up, on the first timed step
        times.append(marks[-1] - marks[0])
        losses.append(loss)
    _, device_peak = backend.device_memory(device)
    step_peak = memory.peak_since_reset() if peak_reset else None
    process_peak = memory.peak_rss()
    say(f"measuring the float32 matmul peak ({PEAK_N}x{PEAK_N} @ {PEAK_N}x{PEAK_N}, best of {PEAK_REPS})")
    peak = matmul_peak_gflops(device, PEAK_N, PEAK_REPS)

    n_params = sum(p.numel() for p in model.parameters())
    target_tokens = int((batch[2] != PAD_ID).sum())
    median, best = statistics.median(times), min(times)
    flops = step_matmul_flops(dict(preset.model, vocab_size=preset.vocab_size), batch_size, batch[0].shape[1],
                              batch[1].shape[1])
    result = {
        "mode": "train", "preset": preset.name, "device": device, "parameters": n_params,
        "batch": {"sentences": batch_size, "src_len": int(batch[0].shape[1]), "tgt_len": int(batch[1].shape[1]),
                  "target_tokens": target_tokens, "padding": float((batch[2] == PAD_ID).mean()),
                  "vocab_size": preset.vocab_size, "seed": seed},
        "warmup_steps": warmup_steps, "steps": steps, "step_s": times, "losses": losses,
        "step_s_median": median, "step_s_min": best, "tokens_per_s": target_tokens / median,
        "peak_rss_bytes": process_peak, "rss_before_steps_bytes": rss_before,
        "step_peak_rss_bytes": step_peak, "step_rss_increase_bytes": step_peak - rss_before if step_peak else None,
        "device_pool_peak_bytes": device_peak if device == "cuda" else None,
        "saved_for_backward_bytes": step.saved,
        "step_matmul_gflop": flops / 1e9, "matmul_peak_gflops": peak, "achieved_gflops": flops / median / 1e9,
        "peak_fraction": flops / median / 1e9 / peak, "blas_threads": blas_threads(),
    }
    if profile:
        say(f"{steps} profiled step(s)")
        result["profile"] = profile_steps(step, device, steps)
        result["profile"]["matmul_op_peak_fraction"] = result["profile"]["matmul_op_gflops"] / peak
    return result


def bench_decode(preset, device, batch_size, seq_len, reps, seed, progress=True):
    """Time beam search (beam 5) and greedy decoding of batch_size synthetic sentences, `reps` times each."""
    from .decode import MAX_LEN_A, MAX_LEN_B, translate_ids
    say = _progress(progress)
    src_ids, _ = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    model = build_model(preset, device, seed).eval()
    say(f"warm-up on 2 sentences, then {reps} timed run(s) of {batch_size} sentences: {preset.name}, {device}")
    translate_ids(model, src_ids[:2], beam=BEAM, batch_tokens=preset.batch_tokens, device=device)
    memory = HostMemory()
    backend.device_memory(device, release=True)
    rss_before, peak_reset = memory.rss(), memory.reset_peak()
    searches = {}
    for name, beam in (("beam", BEAM), ("greedy", 1)):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            hyps = translate_ids(model, src_ids, beam=beam, batch_tokens=preset.batch_tokens, device=device)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        out_tokens = sum(len(h) + 1 for h in hyps)   # eos included: each one is a decoding step
        searches[name] = {"beam_size": beam, "seconds": times, "s_median": median, "s_min": min(times),
                          "sentences_per_s": len(src_ids) / median, "output_tokens_per_s": out_tokens / median,
                          "output_tokens_per_sentence": out_tokens / len(src_ids)}
    _, device_peak = backend.device_memory(device)
    step_peak = memory.peak_since_reset() if peak_reset else None
    return {"mode": "decode", "preset": preset.name, "device": device,
            "parameters": sum(p.numel() for p in model.parameters()),
            "batch": {"sentences": batch_size, "src_len": seq_len, "vocab_size": preset.vocab_size, "seed": seed,
                      "max_len": f"{MAX_LEN_A} x source length + {MAX_LEN_B}",
                      "batch_tokens": preset.batch_tokens},
            "reps": reps, **searches,
            "peak_rss_bytes": memory.peak_rss(), "rss_before_bytes": rss_before,
            "decode_rss_increase_bytes": step_peak - rss_before if step_peak else None,
            "device_pool_peak_bytes": device_peak if device == "cuda" else None,
            "blas_threads": blas_threads()}


# ----- printing -----
def _progress(enabled):
    return (lambda text: print(text, file=sys.stderr, flush=True)) if enabled else (lambda text: None)


def _mb(n):
    if n is None:
        return "n/a"
    mb = n / 2**20
    return f"{mb:,.0f} MB" if mb >= 10 else f"{mb:.2f} MB"


def print_result(r):
    b = r["batch"]
    threads = ", ".join(f"{k} {v}" for k, v in r["blas_threads"].items()) or "unknown"
    print(f"minitorch bench: {r['mode']}, preset {r['preset']} ({r['parameters']:,} parameters), {r['device']}, "
          f"BLAS threads: {threads}")
    if r["mode"] == "train":
        print(f"batch: {b['sentences']} sentences x {b['src_len']} source / {b['tgt_len']} target tokens, "
              f"{b['padding']:.0%} padding, {b['target_tokens']:,} target tokens, vocabulary {b['vocab_size']:,}")
        print(f"{r['steps']} timed steps after {r['warmup_steps']} warm-up (loss {r['losses'][0]:.3f} -> "
              f"{r['losses'][-1]:.3f})")
        rows = [("step time, median", f"{r['step_s_median'] * 1e3:,.0f} ms"),
                ("step time, min", f"{r['step_s_min'] * 1e3:,.0f} ms"),
                ("target tokens/s", f"{r['tokens_per_s']:,.0f}"),
                ("peak RSS of the process", _mb(r["peak_rss_bytes"])),
                ("RSS before the timed steps", _mb(r["rss_before_steps_bytes"])),
                ("peak RSS during them", _mb(r["step_peak_rss_bytes"])),
                ("  increase during a step", _mb(r["step_rss_increase_bytes"])),
                ("saved for backward", _mb(r["saved_for_backward_bytes"])),
                ("matmul GFLOP a step", f"{r['step_matmul_gflop']:,.1f}"),
                ("achieved GFLOP/s", f"{r['achieved_gflops']:,.1f}"),
                ("float32 matmul peak", f"{r['matmul_peak_gflops']:,.1f} GFLOP/s"),
                ("fraction of the peak", f"{r['peak_fraction']:.3f}")]
        if r["device"] == "cuda":
            rows.insert(7, ("GPU memory pool peak", _mb(r["device_pool_peak_bytes"])))
        for name, value in rows:
            print(f"  {name:<28} {value:>16}")
        if "profile" in r:
            print_profile(r["profile"])
    else:
        print(f"{b['sentences']} synthetic sentences of up to {b['src_len']} source tokens, vocabulary "
              f"{b['vocab_size']:,}, batches of {b['batch_tokens']:,} tokens / beam; output length up to "
              f"{b['max_len']}; median of {r['reps']} run(s)")
        header = f"  {'search':<10} {'sentences/s':>12} {'out tokens/s':>13} {'tokens/sentence':>16} {'seconds':>9}"
        print(header)
        for name in ("beam", "greedy"):
            s = r[name]
            label = f"beam {s['beam_size']}" if name == "beam" else "greedy"
            print(f"  {label:<10} {s['sentences_per_s']:>12,.1f} {s['output_tokens_per_s']:>13,.0f} "
                  f"{s['output_tokens_per_sentence']:>16.1f} {s['s_median']:>9.2f}")
        print(f"  peak RSS of the process {_mb(r['peak_rss_bytes'])}; increase while decoding "
              f"{_mb(r['decode_rss_increase_bytes'])}" +
              (f"; GPU memory pool peak {_mb(r['device_pool_peak_bytes'])}" if r["device"] == "cuda" else ""))


def print_profile(p, top=12):
    print(f"\nprofile: {p['steps']} step(s) with every op timed, {p['step_ms']:,.0f} ms a step "
          f"(forward+loss {p['phases_ms']['forward_loss']:,.0f}, backward {p['phases_ms']['backward']:,.0f}, "
          f"clipping {p['phases_ms']['clipping']:,.0f}, optimizer {p['phases_ms']['optimizer']:,.0f} ms)")
    print(f"  {'where':<28} {'ms/step':>9} {'% of step':>10}")
    for row in p["kinds"]:
        print(f"  {row['kind']:<28} {row['ms']:>9,.1f} {row['percent']:>9.1f}%")
    print(f"  matmul ops run at {p['matmul_op_gflops']:,.1f} GFLOP/s = {p['matmul_op_peak_fraction']:.2f} of the "
          f"peak (the attention products are inside the fused attention op)")
    print(f"\n  the {min(top, len(p['ops']))} slowest ops:")
    print(f"  {'op':<28} {'kind':<18} {'calls':>6} {'forward ms':>11} {'backward ms':>12} {'% of step':>10}")
    for row in p["ops"][:top]:
        print(f"  {row['op']:<28} {row['kind']:<18} {row['calls']:>6.0f} {row['forward_ms']:>11,.1f} "
              f"{row['backward_ms']:>12,.1f} {row['percent']:>9.1f}%")
