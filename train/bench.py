"""bench: time training steps or decoding of a preset's model on synthetic batches, and find where a step's time goes.

Train mode times full training steps (forward, loss, backward, clipping, Adam, schedule: what `fit` does each step)
on a synthetic batch of the preset's shape, after warm-up steps, and prints the median and minimum step time, target
tokens per second, peak memory, bytes saved for backward, and the fraction of this machine's float32 matrix-product
peak that the step reaches (the peak measured here, by timing one large matmul). `--profile` then runs more steps
with every op timed and splits a step into matmul, fused ops, elementwise/shape ops, clipping, the optimizer and
Python overhead (everything else: autograd bookkeeping, modules, graph walk), so that the next optimisation is chosen
by measurement.

`--distributed`, under `mpirun -n N`, measures data-parallel scaling: rank 0 first times the one-process step on the
whole batch alone (the other ranks wait, idle), then all N ranks time the data-parallel step of `fit --distributed`,
each on its share of the same batch, with the gradients summed over the ranks after backward (that allreduce is also
timed on its own). It prints both step times and tokens per second, the speed-up, and the scaling efficiency:
tokens/s of N processes over N x tokens/s of one.

Decode mode times beam search (beam 5) and greedy decoding with the key/value cache, as `evaluate` runs them, on a
freshly initialised model: such a model rarely emits eos, so each sentence runs to its length limit (1.5 x source
length + 10), the slowest case; the output tokens per second carry over to real lengths.

The batches are random token ids from a seeded generator: no corpus, tokenizer or --run-dir is needed. Figures
only: compare runs made alternately in one time window, since a shared machine is noisy. The BLAS threads are
chosen as `fit` chooses them (the preset's measured choice, a thread variable of the environment, or --threads N) and
printed with the reason; `--threads 1` against `--threads 2` is how the presets' choices were measured.
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
from minitorch import backend, distributed
from minitorch.graph_memory import saved_bytes
from minitorch.profiler import OpProfiler, kind_of

from . import parallel, run
from .arguments import add_device_argument, non_negative_int, positive_int
from .batching import training_batch
from .errors import TrainError, UsageError
from .presets import PRESETS
from .step import TrainStep, make_optimizer
from .threads import add_threads_argument, setup as setup_blas_threads
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
    add_threads_argument(p)
    p.add_argument("--distributed", action="store_true",
                   help="train mode, under `mpirun -n N python -m train bench ... --distributed`: time the "
                        "data-parallel step of N processes, each on its share of the --batch-size sentences, against "
                        "one process alone on all of them, and print the speed-up and scaling efficiency (needs "
                        "mpi4py: pip install -e '.[dist]')")


def main(args):
    device = run.check_device(args.device)
    preset = PRESETS[args.preset]
    batch_size = args.batch_size or max(preset.batch_tokens // args.seq_len, 1)
    if args.seq_len < 2:
        raise UsageError(f"--seq-len {args.seq_len}: needs at least 2 (one token and eos)")
    if args.seq_len > preset.model["max_len"]:
        raise UsageError(f"--seq-len {args.seq_len} is longer than the {preset.name} model's max_len "
                         f"{preset.model['max_len']}")
    if args.profile and args.mode != "train":
        raise UsageError("--profile times the ops of training steps; drop it with --mode decode")
    if args.distributed:
        if args.mode != "train":
            raise UsageError("--distributed times data-parallel training steps; drop it with --mode decode")
        if args.profile:
            raise UsageError("--profile times the ops of one process's steps; drop it with --distributed")
        return main_distributed(args, preset, device, batch_size)
    chosen_by = setup_blas_threads(preset.name, args.threads)[0]["chosen_by"]
    if args.mode == "train":
        result = bench_train(preset, device, batch_size, args.seq_len, args.steps or 10, args.warmup_steps,
                             args.seed, args.profile, progress=not args.json)
    else:
        result = bench_decode(preset, device, batch_size, args.seq_len, args.steps or 1, args.seed,
                              progress=not args.json)
    result["blas_threads_chosen_by"] = chosen_by
    if args.json:
        print(json.dumps(result))
    else:
        print_result(result)
    return 0


def main_distributed(args, preset, device, batch_size):
    """`bench --distributed`: every rank of the MPI job runs this; rank 0 prints."""
    world = parallel.init_world(True, device)
    with parallel.stop_job_on_error(world, "bench"):
        setup_blas_threads(preset.name, args.threads, world)
        if batch_size < world.size:
            raise UsageError(f"--batch-size {batch_size} is smaller than the {world.size} processes: each needs at "
                             f"least one sentence")
        result = bench_distributed(preset, device, batch_size, args.seq_len, args.steps or 10, args.warmup_steps,
                                   args.seed, world, progress=not args.json)
        if not world.is_main:   # rank 0's result holds the figures of every rank
            return 0
        if args.json:
            print(json.dumps(result))
        else:
            print_distributed(result)
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
    return run.new_model("transformer", preset.vocab_size, preset.model).to(device)


class BenchStep:
    """The training step of `fit` (train/step.py) on one fixed batch, with the bench's measurements around it.
    Calling it returns the loss and the time at each phase boundary.

    With `sync` (a GradientSync) it is the data-parallel step of `fit --distributed`: `batch` is this rank's share of a
    batch of `batch_tokens` target tokens; `sync_s` is then the time of the sum over the ranks in the last step.
    """

    def __init__(self, preset, model, batch, device, sync=None, batch_tokens=None):
        self.batch, self.batch_tokens, self.device = batch, batch_tokens, device   # host arrays, moved each step
        self.timed_sync = None if sync is None else TimedSync(sync, device)
        optimizer, schedule = make_optimizer(model.parameters(), preset.lr, preset.warmup, preset.model["d_model"])
        self.step = TrainStep(model.train(), optimizer, schedule, preset.label_smoothing, preset.clip_norm, device,
                              self.timed_sync)
        self.saved = None

    @property
    def sync_s(self):
        return self.timed_sync.seconds if self.timed_sync else 0.0

    def __call__(self, measure_saved=False, sync_phases=False):
        """One update -> (loss, [start, after forward+loss, after backward (and the sum over ranks), after clipping,
        end])."""
        def mark():
            if sync_phases:
                backend.synchronize(self.device)
            marks.append(time.perf_counter())

        marks = [time.perf_counter()]
        loss = self.step.forward(self.batch, self.batch_tokens)
        mark()
        if measure_saved:
            walk = time.perf_counter()
            self.saved = saved_bytes(loss)
            walk = time.perf_counter() - walk
            marks = [m + walk for m in marks]  # the graph walk is the bench's, not the step's
        result = self.step.update(loss, mark=mark)   # ends with the step's one read of the loss and gradient norm
        marks.append(time.perf_counter())
        if not result.applied:
            raise TrainError(f"the loss became {result.loss} during the benchmark")
        return result.loss, marks


class TimedSync:
    """A GradientSync that times itself: the device is waited for before (the backward is not the sum's time) and
    after; these waits are the benchmark's, outside the step `fit` runs."""

    def __init__(self, sync, device):
        self.sync, self.device, self.seconds, self.buckets = sync, device, 0.0, sync.buckets

    def __call__(self, extras):
        backend.synchronize(self.device)
        start = time.perf_counter()
        out = self.sync(extras)
        backend.synchronize(self.device)
        self.seconds = time.perf_counter() - start
        return out


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
    step = BenchStep(preset, model, batch, device)
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

    n_params = model.num_parameters()
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


def timed_steps(step, steps, warmup_steps, world=None):
    """Run warmup_steps untimed steps, then `steps` timed ones -> {step_s, losses, allreduce_s: one per timed step}.
    With a world, its ranks start the timed steps together."""
    for _ in range(warmup_steps):
        step()
    if world is not None:
        world.barrier()
    out = {"step_s": [], "losses": [], "allreduce_s": []}
    for _ in range(steps):
        loss, marks = step()
        out["step_s"].append(marks[-1] - marks[0])
        out["losses"].append(loss)
        out["allreduce_s"].append(step.sync_s)
    return out


def bench_distributed(preset, device, batch_size, seq_len, steps, warmup_steps, seed, world, progress=True):
    """Time the one-process step on rank 0 alone, then the data-parallel step on every rank of `world`, each on its
    share of the same batch -> on rank 0 a dict of figures (see print_distributed), None on the other ranks."""
    say = _progress(progress and world.is_main)
    src_ids, tgt_ids = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    batch = training_batch(src_ids, tgt_ids)
    target_tokens = int((batch[2] != PAD_ID).sum())
    alone = None
    if world.is_main:
        say(f"one process alone: {warmup_steps} warm-up step(s), then {steps} timed: {preset.name}, batch "
            f"{batch[0].shape} -> {batch[1].shape}, {device}")
        alone = timed_steps(BenchStep(preset, build_model(preset, device, seed), batch, device), steps, warmup_steps)
    world.barrier()   # it sleeps while it waits, leaving the cores to rank 0's timing

    # every rank starts from the same fresh weights (the same seed), as fit's broadcast of rank 0's makes them
    mine = parallel.share(list(range(batch_size)), world)
    share = training_batch([src_ids[i] for i in mine], [tgt_ids[i] for i in mine])
    model = build_model(preset, device, seed)
    sync = distributed.GradientSync(model.parameters(), world)
    step = BenchStep(preset, model, share, device, sync=sync, batch_tokens=target_tokens)
    say(f"{world.size} process{'es' if world.size > 1 else ''} together: {warmup_steps} warm-up step(s), then "
        f"{steps} timed, each on its share of the batch")
    timed = timed_steps(step, steps, warmup_steps, world)
    ranks = world.allgather_object(dict(timed, sentences=len(mine), target_tokens=int((share[2] != PAD_ID).sum()),
                                        blas_threads=blas_threads()))
    if not world.is_main:
        return None

    # a job's step lasts until its slowest rank is done; the last rank to reach the allreduce waits for no one, so
    # the fastest rank's allreduce is the collective's own cost, the slowest's adds the wait for the other ranks
    per_step = [list(column) for column in zip(*(r["step_s"] for r in ranks))]
    job_s = [max(ranks_s) for ranks_s in per_step]
    reduce_s = [list(column) for column in zip(*(r["allreduce_s"] for r in ranks))]
    one_s, n_s = statistics.median(alone["step_s"]), statistics.median(job_s)
    grad_bytes = sum(b.size * np.dtype(b.dtype).itemsize for b in sync.buckets) if world.size > 1 else 0
    return {
        "mode": "train", "distributed": True, "preset": preset.name, "device": device, "n_ranks": world.size,
        "parameters": model.num_parameters(),
        "batch": {"sentences": batch_size, "src_len": int(batch[0].shape[1]), "tgt_len": int(batch[1].shape[1]),
                  "target_tokens": target_tokens, "padding": float((batch[2] == PAD_ID).mean()),
                  "vocab_size": preset.vocab_size, "seed": seed,
                  "rank_sentences": [r["sentences"] for r in ranks],
                  "rank_target_tokens": [r["target_tokens"] for r in ranks]},
        "warmup_steps": warmup_steps, "steps": steps,
        "one_process": {"step_s": alone["step_s"], "losses": alone["losses"], "step_s_median": one_s,
                        "step_s_min": min(alone["step_s"]), "tokens_per_s": target_tokens / one_s},
        "data_parallel": {"step_s": job_s, "losses": timed["losses"], "step_s_median": n_s, "step_s_min": min(job_s),
                          "tokens_per_s": target_tokens / n_s, "rank_step_s": [r["step_s"] for r in ranks]},
        "speedup": one_s / n_s, "scaling_efficiency": one_s / n_s / world.size,
        "allreduce_ms_median": 1e3 * statistics.median(min(s) for s in reduce_s),
        "allreduce_with_wait_ms_median": 1e3 * statistics.median(max(s) for s in reduce_s),
        "allreduce_bytes_per_step": grad_bytes, "allreduce_mb_per_step": grad_bytes / 2**20,
        "blas_threads": [r["blas_threads"] for r in ranks],
    }


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
            "parameters": model.num_parameters(),
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
    why = f" ({r['blas_threads_chosen_by']}; --threads N to change)" if "blas_threads_chosen_by" in r else ""
    print(f"minitorch bench: {r['mode']}, preset {r['preset']} ({r['parameters']:,} parameters), {r['device']}, "
          f"BLAS threads: {threads}{why}")
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
                ("fraction of the peak", f"{r['peak_fraction']:.3g}")]
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


def _ms(seconds):
    ms = 1e3 * seconds
    return f"{ms:,.0f} ms" if ms >= 10 else f"{ms:.2f} ms"


def print_distributed(r):
    """The table of `bench --distributed`: one process alone against the data-parallel job."""
    b, one, dp, n = r["batch"], r["one_process"], r["data_parallel"], r["n_ranks"]
    processes = f"{n} process{'es' if n > 1 else ''}"
    print(f"minitorch bench: train, data-parallel over {processes}, preset {r['preset']} ({r['parameters']:,} "
          f"parameters), {r['device']}")
    print(f"batch: {b['sentences']} sentences x {b['src_len']} source / {b['tgt_len']} target tokens, "
          f"{b['padding']:.0%} padding, {b['target_tokens']:,} target tokens, vocabulary {b['vocab_size']:,}; "
          f"sentences a process: {', '.join(map(str, b['rank_sentences']))}")
    print("BLAS threads: " + "; ".join(f"rank {rank} " + (", ".join(f"{k} {v}" for k, v in threads.items()) or
                                                          "unknown") for rank, threads in enumerate(r["blas_threads"])))
    print(f"{r['steps']} timed steps after {r['warmup_steps']} warm-up, each way (loss {one['losses'][0]:.3f} -> "
          f"{one['losses'][-1]:.3f} alone, {dp['losses'][0]:.3f} -> {dp['losses'][-1]:.3f} data-parallel)")
    reduced = n > 1
    rows = [("", "1 process", processes),
            ("step time, median", _ms(one["step_s_median"]), _ms(dp["step_s_median"])),
            ("step time, min", _ms(one["step_s_min"]), _ms(dp["step_s_min"])),
            ("target tokens/s", f"{one['tokens_per_s']:,.0f}", f"{dp['tokens_per_s']:,.0f}"),
            ("speed-up", "", f"{r['speedup']:.2f}"),
            ("scaling efficiency", "", f"{r['scaling_efficiency']:.2f}"),
            ("allreduce a step, median", "", _ms(r["allreduce_ms_median"] / 1e3) if reduced else "none"),
            ("  with the wait for ranks", "", _ms(r["allreduce_with_wait_ms_median"] / 1e3) if reduced else "none"),
            ("gradients summed a step", "", _mb(r["allreduce_bytes_per_step"]) if reduced else "none")]
    for name, alone, together in rows:
        print(f"  {name:<28} {alone:>12} {together:>14}")


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
