"""Train mode: full training steps (fit's step) timed on one batch, alone or data-parallel, and profiled by op kind."""
import gc
import statistics
import time
import tracemalloc
from collections import defaultdict

import numpy as np

from minitorch import backend, distributed
from transformer import registry
from minitorch.core import reference_of
from minitorch.tools.graph_memory import saved_bytes
from minitorch.tools.profiler import OpProfiler, kind_of

from ...cli import parallel
from ...data.batching import training_batch
from ...cli.errors import TrainError
from ...loop.assemble import make_update
from ...data.tokenizer import PAD_ID
from .launches import GPU_HOW, step_launches
from .machine import HostMemory, PEAK_N, PEAK_REPS, blas_threads, matmul_peak_gflops, step_matmul_flops
from .report import progress_printer
from .workload import build_model, synthetic_batch


class BenchStep:
    """The training step of `fit` (train/loop/step.py) on one fixed batch, with the bench's measurements around it.
    Calling it returns the loss and the time at each phase boundary.

    With `world` it is the data-parallel step of `fit --distributed` (a GradientSync over the optimizer's flat
    buffers, as fit makes it): `batch` is this rank's share of a batch of `batch_tokens` target tokens; `sync_s` is
    then the time of the sum over the ranks in the last step.
    """

    def __init__(self, preset, model, batch, device, world=None, batch_tokens=None, kind="transformer",
                 precision="fp32"):
        self.batch, self.batch_tokens, self.device = batch, batch_tokens, device   # host arrays, moved each step
        sync_of = None if world is None else (lambda flat: TimedSync(distributed.GradientSync(flat, world), device))
        d_model = preset.sizes(kind).get("d_model", 1)   # the schedule's scale, as fit takes it (1 for an LSTM)
        update = make_update(model.train(), preset, d_model, device, world, sync_of=sync_of, precision=precision)
        self.overflows = 0   # fp16: steps skipped because the scaled gradients overflowed (the scale then drops)
        self.flat, self.step, self.timed_sync = update.flat, update.step_fn, update.step_fn.sync
        self.saved = None

    @property
    def sync_s(self):
        return self.timed_sync.seconds if self.timed_sync else 0.0

    def __call__(self, measure_saved=False, sync_phases=False, on_mark=None):
        """One update -> (loss, [start, after forward+loss, after backward (and the sum over ranks), after clipping,
        end]); on_mark() (optional) is called at the three inner marks (the launch count's phases)."""
        def mark():
            if sync_phases:
                backend.synchronize(self.device)
            marks.append(time.perf_counter())
            on_mark and on_mark()

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
        self.overflows += result.overflow
        if not result.applied and not result.overflow:
            raise TrainError(f"the loss became {result.loss} during the benchmark")
        return result.loss, marks


def traced_step(step):
    """One more step, untimed, under tracemalloc (NumPy reports its allocations to it) -> (the bytes allocated since
    the step began that are alive after forward and loss: the graph and what it saved; the step's peak above the
    memory before it: graph, saved arrays, gradients and the optimizer's temporaries at their largest)."""
    gc.collect()
    tracemalloc.start()
    try:
        after_forward = []
        step(on_mark=lambda: after_forward.append(tracemalloc.get_traced_memory()[0]))
        return after_forward[0], tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class TimedSync:
    """A GradientSync that times itself: the device is waited for before (the backward is not the sum's time) and
    after; these waits are the benchmark's, outside the step `fit` runs."""

    def __init__(self, sync, device):
        self.sync, self.device, self.seconds = sync, device, 0.0

    def __call__(self, extras):
        backend.synchronize(self.device)
        start = time.perf_counter()
        out = self.sync(extras)
        backend.synchronize(self.device)
        self.seconds = time.perf_counter() - start
        return out


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
        name = reference_of(cls).__name__   # a kernel by its op's name
        by_op.append({"op": name, "kind": kind_of(cls), "calls": calls, "forward_ms": 1e3 * fwd,
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


def bench_train(preset, device, batch_size, seq_len, steps, warmup_steps, seed, profile, progress=True,
                kind="transformer", precision="fp32"):
    """Time `steps` training steps of a model kind after `warmup_steps` in `precision` (fp32, fp16) -> a dict of
    figures (see print_result)."""
    say = progress_printer(progress)
    memory = HostMemory()
    src_ids, tgt_ids = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    batch = training_batch(src_ids, tgt_ids)
    model = build_model(preset, device, seed, kind)
    step = BenchStep(preset, model, batch, device, kind=kind, precision=precision)
    say(f"{warmup_steps} warm-up step(s), then {steps} timed: {preset.name} {kind}, batch {batch[0].shape} -> "
        f"{batch[1].shape}, {device}, {precision_name(precision, device)}")
    for i in range(warmup_steps):
        step(measure_saved=i == 0)
    backend.device_memory(device, release=True)
    rss_before, peak_reset = memory.rss(), memory.reset_peak()
    times, losses, issue = [], [], []
    for _ in range(steps):
        loss, marks = step(measure_saved=step.saved is None)   # without warm-up, on the first timed step
        times.append(marks[-1] - marks[0])
        issue.append(marks[3] - marks[0])   # the host's time to issue forward, backward and clipping: up to the read
        losses.append(loss)
    _, device_peak = backend.device_memory(device)
    step_peak = memory.peak_since_reset() if peak_reset else None
    graph_bytes, traced_peak = traced_step(step) if device == "cpu" else (None, None)
    process_peak = memory.peak_rss()
    say(f"measuring the float32 matmul peak ({PEAK_N}x{PEAK_N} @ {PEAK_N}x{PEAK_N}, best of {PEAK_REPS})")
    peak = matmul_peak_gflops(device, PEAK_N, PEAK_REPS)

    n_params = model.num_parameters()
    target_tokens = int((batch[2] != PAD_ID).sum())
    median, best = statistics.median(times), min(times)
    flops = step_matmul_flops(dict(preset.model, vocab_size=preset.vocab_size), batch_size, batch[0].shape[1],
                              batch[1].shape[1]) if registry.kind_of(kind).benchmarked else None
    result = {
        "mode": "train", "preset": preset.name, "model": kind, "device": device, "parameters": n_params,
        "precision": precision_name(precision, device), "overflow_steps": step.overflows,
        "batch": {"sentences": batch_size, "src_len": int(batch[0].shape[1]), "tgt_len": int(batch[1].shape[1]),
                  "target_tokens": target_tokens, "padding": float((batch[2] == PAD_ID).mean()),
                  "vocab_size": preset.vocab_size, "seed": seed},
        "warmup_steps": warmup_steps, "steps": steps, "step_s": times, "losses": losses,
        "step_s_median": median, "step_s_min": best, "tokens_per_s": target_tokens / median,
        "peak_rss_bytes": process_peak, "rss_before_steps_bytes": rss_before,
        "step_peak_rss_bytes": step_peak, "step_rss_increase_bytes": step_peak - rss_before if step_peak else None,
        "device_pool_peak_bytes": device_peak if device == "cuda" else None,
        "saved_for_backward_bytes": step.saved,
        "traced_graph_bytes": graph_bytes, "traced_step_peak_bytes": traced_peak,
        "step_matmul_gflop": flops and flops / 1e9, "matmul_peak_gflops": peak,
        "achieved_gflops": flops and flops / median / 1e9, "peak_fraction": flops and flops / median / 1e9 / peak,
        "blas_threads": blas_threads(),
        # on a GPU the step waits at its one read for what the host issued before: an issue time near the step time
        # means the GPU waited for the host (bound by Python: a bigger batch costs the host no more)
        "host_issue_s_median": statistics.median(issue),
        "other_threads": blas_threads(blas=False),
    }
    if device == "cuda":
        launches = step_launches(step, device)   # one more step, counted (the stand-in is the only counter)
        result["launches"] = launches if launches is not None else {"unavailable": GPU_HOW}
    if profile:
        say(f"{steps} profiled step(s)")
        result["profile"] = profile_steps(step, device, steps)
        result["profile"]["matmul_op_peak_fraction"] = result["profile"]["matmul_op_gflops"] / peak
    return result


def precision_name(precision, device):
    """What a step's products ran in: fp32, fp32 (tf32 products) with --tf32 on cuda, or fp16 (mixed)."""
    if precision == "fp32" and device == "cuda" and backend.tf32_enabled():
        return "fp32 (tf32 products)"
    return precision if precision == "fp32" else "fp16 (mixed, loss scaling)"


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
    say = progress_printer(progress and world.is_main)
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
    step = BenchStep(preset, model, share, device, world=world, batch_tokens=target_tokens)
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
    grad_bytes = sum(buffer.grad.nbytes for buffer in step.flat.buffers) if world.size > 1 else 0
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
