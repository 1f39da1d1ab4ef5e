"""costs: what issue 22's techniques cost in time, measured the way `bench` measures (synthetic batches of the
preset's model; no corpus needed).

    R-Drop         a training step of fit --rdrop (the batch twice through the model, plus the KL term) against
                   fit's plain step, on the same batch, from the same weights
    ensemble       greedy and beam decoding (as evaluate runs them) with two models (evaluate --ensemble) against
                   one; freshly initialised models rarely emit eos, so every sentence runs to its length limit in
                   both, and the ratio is the cost per token step

The two sides of each comparison are timed alternately (a shared machine is noisy) and the medians compared. Writes
costs.md and costs.json into --out. BPE-dropout's cost is the re-segmentation of the training pairs once an epoch
(train/data/bpe_dropout.py; about 14 s an epoch on Multi30k in one process) and --extra-source doubles the pairs of an
epoch: neither changes a step.
"""
import json
import statistics
import time

from ...run import threads
from ...cli.arguments import add_device_argument, non_negative_float, positive_int
from ...data.batching import training_batch
from ...evaluation.decode import translate_ids
from ...loop.assemble import make_update
from ...run.presets import PRESETS
from ..bench.workload import build_model, synthetic_batch
from . import results


def add_arguments(p):
    p.add_argument("--preset", choices=sorted(PRESETS), default="small", help="the model size (default: small)")
    p.add_argument("--steps", type=positive_int, default=3, help="timed training steps of each kind (default 3)")
    p.add_argument("--batch-size", type=positive_int, default=32, help="sentences of the training batch (32)")
    p.add_argument("--seq-len", type=positive_int, default=24, help="tokens a side, eos/bos included (24)")
    p.add_argument("--rdrop", type=non_negative_float, default=1.0, help="R-Drop's alpha (1.0; any alpha costs "
                                                                           "the same)")
    p.add_argument("--sentences", type=positive_int, default=16, help="sentences decoded (16)")
    p.add_argument("--reps", type=positive_int, default=2, help="timed decodings of each kind (2)")
    add_device_argument(p)


def step_of(preset, seed, device, rdrop):
    """fit's update (R-Drop's with rdrop > 0) on a fresh model of the preset, assembled as fit assembles it."""
    model = build_model(preset, device, seed).train()
    return make_update(model, preset, preset.model["d_model"], device, rdrop=rdrop).step_fn


def alternate(runs, reps):
    """{name: [seconds]}: each of runs (name -> a callable) once a round, `reps` rounds, after one warm-up round."""
    times = {name: [] for name in runs}
    for r in range(reps + 1):
        for name, f in runs.items():
            start = time.perf_counter()
            f()
            if r:
                times[name].append(time.perf_counter() - start)
    return times


def main(args, out):
    preset = PRESETS[args.preset]
    print(threads.setup(args.preset, None)[1])
    src, tgt = synthetic_batch(args.batch_size, args.seq_len, preset.vocab_size, 0)
    batch = training_batch(src, tgt)
    steps = {"plain step": step_of(preset, 0, args.device, 0.0), "R-Drop step": step_of(preset, 0, args.device,
                                                                                        args.rdrop)}
    train = alternate({name: (lambda s=s: s(batch)) for name, s in steps.items()}, args.steps)
    sources = synthetic_batch(args.sentences, args.seq_len, preset.vocab_size, 1)[0]
    one = build_model(preset, args.device, 0).eval()
    from transformer.decoding import Ensemble
    two = Ensemble([one, build_model(preset, args.device, 1).eval()])
    runs = {}
    for beam in (1, 5):
        for name, model in (("one model", one), ("ensemble of two", two)):
            runs[f"{'greedy' if beam == 1 else 'beam 5'}, {name}"] = (
                lambda m=model, b=beam: translate_ids(m, sources, beam=b, batch_tokens=preset.batch_tokens,
                                                      device=args.device))
    decode = alternate(runs, args.reps)
    medians = {name: statistics.median(t) for name, t in {**train, **decode}.items()}
    pairs = [("plain step", "R-Drop step"), ("greedy, one model", "greedy, ensemble of two"),
             ("beam 5, one model", "beam 5, ensemble of two")]
    rows = [[f"{a} / {b}", medians[a], medians[b], medians[b] / medians[a]] for a, b in pairs]
    table = results.markdown_table(["comparison", "seconds (first)", "seconds (second)", "ratio"], rows, digits=3)
    note = (f"preset {preset.name}, {args.device}; training batch {args.batch_size} x {args.seq_len} tokens, median of "
            f"{args.steps} steps; decoding {args.sentences} sentences of {args.seq_len} tokens, median of {args.reps}")
    (out / "costs.md").write_text(note + "\n\n" + table, encoding="utf-8")
    (out / "costs.json").write_text(json.dumps({"note": note, "seconds": {**train, **decode}}, indent=1) + "\n")
    print(f"\n{note}\n\n{table}")
    return 0
