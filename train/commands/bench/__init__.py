"""bench: time training steps or decoding of a preset's model on synthetic batches, and find where a step's time goes.

Train mode times full training steps (forward, loss, backward, clipping, Adam, schedule: what `fit` does each step)
on a synthetic batch of the preset's shape, after warm-up steps, and prints the median and minimum step time, target
tokens per second, peak memory, bytes saved for backward, on the CPU what the graph holds after forward and loss and
the step's peak memory above the memory before it (tracemalloc, on one more untimed step), and the fraction of this
machine's float32 matrix-product peak that the step reaches (the peak measured here, by timing one large matmul).
`--profile` then runs more steps with every op timed and splits a step into matmul, fused ops, elementwise/shape
ops, clipping, the optimizer and Python overhead (everything else: autograd bookkeeping, modules, graph walk), so that
the next optimisation is chosen by measurement.

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
chosen as `fit` chooses them (measured at start, a thread variable of the environment, or --threads N) and
printed with the reason; `--threads 1` against `--threads 2` compares two counts on whole steps.
"""
import dataclasses
import json

from transformer import registry

from ...cli import parallel
from ...cli.arguments import (add_device_argument, add_precision_arguments, add_threads_argument, apply_tf32,
                              check_device, non_negative_int, positive_int)
from ...cli.errors import UsageError
from ...run.presets import PRESETS
from ...cli.prog import PROG
from ...run.threads import setup as setup_blas_threads
from .decode_mode import bench_decode
from .host_mode import bench_host_rounds, print_host
from .machine import step_matmul_flops
from .reference import print_beside, run_reference
from .report import print_distributed, print_result
from .train_mode import BenchStep, bench_distributed, bench_train
from .workload import PADDING, SEQ_LEN, build_model, synthetic_batch

__all__ = ["add_arguments", "main", "BenchStep", "bench_train", "bench_distributed", "bench_decode", "build_model",
           "synthetic_batch", "step_matmul_flops", "print_result", "print_distributed", "SEQ_LEN", "PADDING"]

TRAIN_STEPS = 10   # timed training steps when --steps is not given


def add_arguments(p):
    p.add_argument("--preset", required=True, choices=sorted(PRESETS),
                   help="the model (and batch size) to time: " + "; ".join(
                       f"{name}: {preset.description}" for name, preset in PRESETS.items()))
    p.add_argument("--model", choices=registry.MODELS, default=registry.DEFAULT_MODEL,
                   help="the model kind, in the preset's sizes for it (default transformer; lstm and lstm-attn in "
                        "train and decode mode, without --host, --distributed and --vs-torch)")
    p.add_argument("--mode", choices=("train", "decode"), default="train",
                   help="train: time training steps (default); decode: time beam search and greedy decoding")
    add_device_argument(p)
    add_precision_arguments(p, default="fp32")
    p.add_argument("--steps", type=positive_int,
                   help=f"timed training steps (default {TRAIN_STEPS}), or timed repetitions of decoding (default 1)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=2,
                   help="untimed steps first (default 2)")
    p.add_argument("--batch-size", type=positive_int,
                   help=f"sentences a batch (default: the preset's batch tokens / {SEQ_LEN}; 128 for small)")
    p.add_argument("--seq-len", type=positive_int, default=SEQ_LEN,
                   help=f"padded tokens a side, eos/bos included (default {SEQ_LEN}); about "
                        f"{round(100 * PADDING)}%% of them are padding")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the batch, weights and dropout")
    p.add_argument("--vocab-size", type=positive_int,
                   help="the model's vocabulary (default: the preset's); to compare steps at one model size across "
                        "presets' versions (the small preset's was 8000 before issue 13)")
    p.add_argument("--profile", action="store_true",
                   help="train mode: afterwards run --steps more steps with every op timed, and print where a step's "
                        "time goes by op kind and by op")
    p.add_argument("--host", action="store_true",
                   help="train mode: time the host's cost of a step (the engine's Python) on the preset's structure "
                        "at tiny sizes, count the step's function calls, and run scripts/torch_reference.py --host "
                        "beside it when PyTorch is installed")
    p.add_argument("--rounds", type=positive_int, default=3,
                   help="--host: time ours and PyTorch's in turn this many times and take the medians (default 3)")
    p.add_argument("--vs-torch", action="store_true",
                   help="train mode: then run scripts/torch_reference.py on the same preset, batch and steps (in its "
                        "own process; PyTorch needed) and print its step time, speed, peak memory and graph beside "
                        "ours")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    add_threads_argument(p)
    p.add_argument("--distributed", action="store_true",
                   help=f"train mode, under `mpirun -n N {PROG} bench ... --distributed`: time the "
                        "data-parallel step of N processes, each on its share of the --batch-size sentences, against "
                        "one process alone on all of them, and print the speed-up and scaling efficiency (needs "
                        "mpi4py: pip install -e '.[dist]')")


def main(args):
    device = check_device(args.device)
    apply_tf32(args, device)
    preset = PRESETS[args.preset]
    if args.vocab_size is not None:
        preset = preset.replace(vocab_size=args.vocab_size)
    batch_size = args.batch_size or max(preset.batch_tokens // args.seq_len, 1)
    if args.seq_len < 2:
        raise UsageError(f"--seq-len {args.seq_len}: needs at least 2 (one token and eos)")
    if not preset.sizes(args.model):
        raise UsageError(f"--model {args.model}: the preset {preset.name} gives no sizes for it")
    max_len = preset.sizes(args.model)["max_len"]
    if args.seq_len > max_len:
        raise UsageError(f"--seq-len {args.seq_len} is longer than the {preset.name} model's max_len {max_len}")
    if not registry.kind_of(args.model).benchmarked and (args.host or args.distributed or args.vs_torch):
        raise UsageError(f"--model {args.model}: --host, --distributed and --vs-torch time the Transformer only")
    if args.vs_torch and (args.mode != "train" or args.host or args.distributed):
        raise UsageError("--vs-torch compares training steps; drop --mode decode, --host and --distributed")
    if args.precision != "fp32" and (args.mode != "train" or args.host or args.distributed or args.vs_torch):
        raise UsageError(f"--precision {args.precision} times training steps of `bench` alone; drop --mode decode, "
                         f"--host, --distributed and --vs-torch")
    if args.profile and args.mode != "train":
        raise UsageError("--profile times the ops of training steps; drop it with --mode decode")
    if args.distributed:
        if args.mode != "train":
            raise UsageError("--distributed times data-parallel training steps; drop it with --mode decode")
        if args.profile:
            raise UsageError("--profile times the ops of one process's steps; drop it with --distributed")
        return main_distributed(args, preset, device, batch_size)
    chosen_by = setup_blas_threads(preset.name, args.threads)[0]["chosen_by"]
    if args.host:
        if args.mode != "train" or args.profile:
            raise UsageError("--host times training steps on its own; drop --mode decode and --profile")
        steps, warmup = args.steps or 50, max(args.warmup_steps, 5)
        ours, theirs = bench_host_rounds(preset, device, steps, warmup, args.seed, args.rounds)
        if args.json:
            print(json.dumps({"minitorch": ours, "pytorch": theirs}))
        else:
            print_host(ours, theirs)
        return 0
    steps = args.steps or (TRAIN_STEPS if args.mode == "train" else 1)
    if args.mode == "train":
        result = bench_train(preset, device, batch_size, args.seq_len, steps, args.warmup_steps,
                             args.seed, args.profile, progress=not args.json, kind=args.model,
                             precision=args.precision)
    else:
        result = bench_decode(preset, device, batch_size, args.seq_len, steps, args.seed,
                              progress=not args.json, kind=args.model)
    result["blas_threads_chosen_by"] = chosen_by
    if args.vs_torch:
        result["pytorch"] = run_reference(args.preset, device, "--batch-size", batch_size, "--seq-len", args.seq_len,
                                          "--steps", steps, "--warmup-steps", args.warmup_steps,
                                          "--seed", args.seed, *(["--vocab-size", args.vocab_size]
                                                                 if args.vocab_size else []))
    if args.json:
        print(json.dumps(result))
    else:
        print_result(result)
        if args.vs_torch:
            print_beside(result, result["pytorch"])
    return 0


def main_distributed(args, preset, device, batch_size):
    """`bench --distributed`: every rank of the MPI job runs this; rank 0 prints."""
    world = parallel.init_world(True, device)
    with parallel.stop_job_on_error(world, "bench"):
        setup_blas_threads(preset.name, args.threads, world)
        if batch_size < world.size:
            raise UsageError(f"--batch-size {batch_size} is smaller than the {world.size} processes: each needs at "
                             f"least one sentence")
        result = bench_distributed(preset, device, batch_size, args.seq_len, args.steps or TRAIN_STEPS,
                                   args.warmup_steps, args.seed, world, progress=not args.json)
        if not world.is_main:   # rank 0's result holds the figures of every rank
            return 0
        if args.json:
            print(json.dumps(result))
        else:
            print_distributed(result)
    return 0
