"""fit: train a model on a parallel corpus (teacher forcing, label smoothing, Adam with warmup, clipping).

After each epoch: validation loss and greedy validation BLEU, a record in metrics.jsonl, checkpoints `last`, `best`
(by validation BLEU) and `avg` (the average of the last k epochs). `--resume` continues a stopped run exactly where
it stopped: step, optimizer, schedule, random state and the position in the epoch's batch order. Ctrl-C stops after
the current step and saves `last` (so do SIGTERM and a file named STOP in the run folder: `touch RUN_DIR/STOP`, the
way to stop a --distributed job, whose launcher kills its processes a moment after Ctrl-C). A step whose loss or
gradient norm is nan or inf is skipped with a warning; 5 of them in a row stop the run, leaving the last checkpoint
as it was. With --precision fp16 a step whose scaled gradients overflow (a finite loss) is skipped without one: the
loss scale is halved, and metrics.jsonl counts them (overflow_batches). Validation and decoding run in float32.

On a terminal a progress bar shows the epoch; elsewhere (a log file, a pipe, CI) a plain progress line goes to
stdout every 30 seconds and at the end of each epoch. The BLAS threads are chosen for the preset (see --threads),
printed first and recorded in config.json; a resumed run keeps the recorded choice (unless --threads is given),
and a run on more than one thread checks after its first steps that they are faster than one (falling back to one
when they are not). Only one fit at a time writes a run folder: it holds a lock on RUN_DIR/fit.lock while it runs,
and a second fit there stops at once, naming the first (train/run/lock.py).
"""
import sys
from pathlib import Path

from minitorch import distributed

from ..cli import memory, parallel
from ..cli.errors import UsageError
from ..cli.arguments import (add_device_argument, add_tf32_argument, add_threads_argument, apply_tf32, check_device,
                             positive_int)
from ..data.corpus import prepare_corpus
from ..loop.assemble import assemble
from ..run import lock as run_lock, threads
from ..run.presets import PRESETS
from ..run.settings import add_flags
from ..run.resolve import MIN_MAX_LEN, resolve_settings


def add_arguments(p):
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="; ".join(f"{name}: {preset.description}" for name, preset in PRESETS.items()) +
                   " (required, except with --resume --run-dir RUN, which reads it from RUN)")
    p.add_argument("--data-dir", help="a corpus folder with train.SRC, train.TGT, val.SRC, val.TGT (plain or .gz); "
                                      "default: Multi30k from $MINITORCH_DATA/multi30k or ~/.cache/minitorch/multi30k")
    p.add_argument("--run-dir", help="where config, tokenizer, metrics and checkpoints go "
                                     "(default: runs/PRESET-SRC-TGT)")
    add_device_argument(p)
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last checkpoint")
    add_flags(p, PRESETS)   # a flag for each run setting that fit takes (run/settings.py declares them)
    add_tf32_argument(p)
    parallel.add_distributed_argument(p)
    add_threads_argument(p)
    sizes = p.add_argument_group("model size (default: the preset's)")
    sizes.add_argument("--d-model", type=positive_int, help="Transformer width; a multiple of --n-heads")
    sizes.add_argument("--n-heads", type=positive_int, help="Transformer attention heads")
    sizes.add_argument("--d-ff", type=positive_int, help="Transformer feed-forward width")
    sizes.add_argument("--layers", type=positive_int, help="encoder and decoder layers each (LSTM: layers)")
    sizes.add_argument("--max-len", type=positive_int, help=f"longest sentence in tokens, at least {MIN_MAX_LEN}; "
                                                            f"longer training pairs are left out")


def main(args):
    if hasattr(sys.stdout, "reconfigure"):   # in a log file each line as it comes, in order with stderr's progress
        sys.stdout.reconfigure(line_buffering=True)
    device = check_device(args.device)
    apply_tf32(args, device)
    world = parallel.init_world(args.distributed, device)
    with parallel.stop_job_on_error(world, "fit"), run_lock.RunLock(world) as lock:
        return build_trainer(args, device, world, lock).fit()


def build_trainer(args, device, world=None, lock=None):
    """The Trainer that fit's flags (args) ask for: settings resolved (a resumed run's config.json read once), BLAS
    threads chosen, the corpus found, the run assembled. fit calls it, and the experiments with fit's flags of
    each of their models; lock: fit's RunLock, taken on the run folder (None: no lock, one process)."""
    run_dir = run_dir_of(args)
    if lock is not None:
        lock.take(run_dir)   # a second fit on the folder stops here, before it checks or measures anything
    settings, model_kw, resumed, state = resolve_settings(args, run_dir, device)
    if lock is not None:
        lock.take(run_dir, make=True)   # a new run's folder, made once its settings have passed their checks
    memory.blas_ready()   # OpenBLAS's buffers now, while little is in use: where it cannot, one line, not its exit
    blas, line = threads.setup(settings.preset, args.threads, world, recorded=resumed.blas_threads if resumed else None)
    print(line)
    ranks = world or distributed.World()   # one process: its barriers wait for no one
    ranks.barrier()   # every rank has checked the run folder (and rank 0 holds its lock) before rank 0 writes
    data_dir = parallel.main_first(ranks, lambda: prepare_corpus(settings, run_dir, args.data_dir))
    return assemble(settings.with_changes(data_dir=str(data_dir)), model_kw, run_dir, device, resumed=resumed,
                    state=state, world=world, blas_threads=blas)


def run_dir_of(args):
    """The run folder that fit's flags name: --run-dir, else runs/PRESET-SRC-TGT (which needs --preset)."""
    name = required_preset(args)
    if args.run_dir:
        return Path(args.run_dir)
    preset = PRESETS[name]
    return Path("runs") / f"{preset.name}-{args.src or preset.src}-{args.tgt or preset.tgt}"


def required_preset(args):
    """--preset; UsageError without it, unless `--resume --run-dir RUN` (whose config.json names it)."""
    if args.preset or (args.resume and args.run_dir):
        return args.preset
    raise UsageError("the following arguments are required: --preset (with --resume --run-dir RUN it is read "
                     "from RUN)")
