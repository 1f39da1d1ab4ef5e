"""Host mode (`bench --host`): the host's cost of a training step, the part a GPU cannot hide.

The preset's structure (layers, heads, pre-/post-LN, dropout, label smoothing, tied embeddings) at tiny sizes
(d_model 16, d_ff 32, vocabulary 64, 2 sentences of 8 tokens a side), so that the arithmetic is negligible and what
is timed is the engine's Python: building the graph, the walk, the optimizer's bookkeeping. It prints the host time
of forward+loss, backward and the update per step (medians over --steps) and the function calls of one step, counted
by cProfile (Python functions and the builtins they call). `scripts/torch_reference.py --host` measures PyTorch eager
the same way; with PyTorch installed this command runs it too and prints the two side by side.

The machine is shared and its speed drifts by 10-15% over seconds, more than the difference measured: so the two are
timed in turn, --rounds times (ours, then PyTorch's in its own process, and again), and each figure is the median
over the rounds of each round's median; the ratios of the rounds are printed too, to show the spread.
"""
import cProfile
import pstats
import statistics

from ...data.batching import training_batch
from .reference import NO_TORCH, run_reference
from .train_mode import BenchStep
from .workload import build_model, synthetic_batch

TINY = {"d_model": 16, "d_ff": 32}   # the preset's layers and heads are kept
VOCAB, SENTENCES, SEQ_LEN = 64, 2, 8


def tiny_preset(preset):
    """The preset with its model at the host mode's sizes (heads that divide d_model 16: at most 16)."""
    model = {**preset.model, **TINY, "n_heads": min(preset.model["n_heads"], 16)}
    return preset.replace(model=model, vocab_size=VOCAB, batch_tokens=SENTENCES * SEQ_LEN)


def calls_of(fn):
    """The function calls fn() makes (cProfile's count: Python functions and builtins)."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    return pstats.Stats(profile).total_calls


def bench_host_rounds(preset, device, steps, warmup_steps, seed, rounds):
    """(ours, PyTorch's or None): bench_host's and reference_host's results timed in turn, `rounds` times, each
    figure the median of the rounds' medians (see the module's docstring); "rounds_forward_backward_ms" lists each
    round's forward+backward."""
    step = host_step(preset, device, seed)
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(bench_host(step, steps, warmup_steps))
        theirs.append(reference_host(preset.name, device, steps, warmup_steps, seed))
    ours = {**ours[0], **_over_rounds(ours), "preset": preset.name, "model": tiny_preset(preset).model,
            "device": device, "calls_per_step": calls_of(step), "rounds": rounds}
    return ours, None if theirs[0] is None else {**theirs[0], **_over_rounds(theirs)}


def _over_rounds(results):
    """The rounds' host_ms folded into one: each phase's median over the rounds, and the list of forward+backward."""
    return {"host_ms": {k: statistics.median(r["host_ms"][k] for r in results) for k in results[0]["host_ms"]},
            "rounds_forward_backward_ms": [r["host_ms"]["forward_backward"] for r in results]}


def host_step(preset, device, seed):
    """The BenchStep of the preset's structure at tiny sizes (host_mode's batch)."""
    preset = tiny_preset(preset)
    model = build_model(preset, device, seed)
    return BenchStep(preset, model, training_batch(*synthetic_batch(SENTENCES, SEQ_LEN, VOCAB, seed)), device)


def bench_host(step, steps, warmup_steps):
    """{phase: median host ms} and the loss of `steps` more steps of host_step's step."""
    for _ in range(warmup_steps):
        step()
    phases = {"forward_loss": [], "backward": [], "update": [], "step": []}
    for _ in range(steps):
        loss, marks = step()
        phases["forward_loss"].append(marks[1] - marks[0])
        phases["backward"].append(marks[2] - marks[1])
        phases["update"].append(marks[-1] - marks[2])
        phases["step"].append(marks[-1] - marks[0])
    ms = {name: 1e3 * statistics.median(times) for name, times in phases.items()}
    ms["forward_backward"] = 1e3 * statistics.median(
        f + b for f, b in zip(phases["forward_loss"], phases["backward"]))
    return {"implementation": "minitorch", "vocab_size": VOCAB, "sentences": SENTENCES, "seq_len": SEQ_LEN,
            "steps": steps, "host_ms": ms, "loss": float(loss)}


def reference_host(preset_name, device, steps, warmup_steps, seed):
    """scripts/torch_reference.py --host's result (a dict), or None without PyTorch; runs in its own process."""
    # one intra-op thread, as ours at these sizes: PyTorch's pool spinning on a busy machine would time the pool
    return run_reference(preset_name, device, "--host", "--steps", steps, "--warmup-steps", warmup_steps,
                         "--seed", seed, "--threads", 1)


def print_host(ours, theirs):
    m = ours["model"]
    print(f"host cost of a training step: preset {ours['preset']}'s structure ({m['n_encoder_layers']}+"
          f"{m['n_decoder_layers']} layers, {m['n_heads']} heads) at d_model {m['d_model']}, d_ff {m['d_ff']}, "
          f"vocabulary {ours['vocab_size']}, {ours['sentences']} sentences x {ours['seq_len']} tokens, "
          f"{ours['device']}; medians of {ours['steps']} steps, of {ours['rounds']} rounds"
          + (" timed in turn with PyTorch's" if theirs else ""))
    rows = [("forward+loss, ms", "forward_loss"), ("backward, ms", "backward"),
            ("forward+backward, ms", "forward_backward"), ("update, ms", "update"), ("whole step, ms", "step")]
    header = f"  {'':<28} {'minitorch':>10}"
    if theirs:
        header += f" {'PyTorch ' + theirs['torch']:>16} {'ratio':>7}"
    print(header)
    for label, key in rows:
        line = f"  {label:<28} {ours['host_ms'][key]:>10.2f}"
        if theirs:
            line += f" {theirs['host_ms'][key]:>16.2f} {ours['host_ms'][key] / theirs['host_ms'][key]:>7.2f}"
        print(line)
    line = f"  {'function calls a step':<28} {ours['calls_per_step']:>10,}"
    if theirs:
        line += f" {theirs['calls_per_step']:>16,} {ours['calls_per_step'] / theirs['calls_per_step']:>7.2f}"
    print(line)
    if not theirs:
        print(f"  ({NO_TORCH})")
        return
    print("  forward+backward ratio of each round: " + ", ".join(
        f"{a / b:.2f}" for a, b in zip(ours["rounds_forward_backward_ms"], theirs["rounds_forward_backward_ms"])))


__all__ = ["bench_host_rounds", "bench_host", "host_step", "reference_host", "print_host", "tiny_preset", "calls_of"]
