"""A run assembled in one place: the corpus read, the tokenizer trained (or a resumed run's loaded), config.json
written, the model, optimizer, flat parameters and gradient sync built, the validation data encoded and, on
--resume, the saved training state loaded into them; then a Trainer that only trains. fit and the experiments call
assemble(); the bench and the experiments' step timings call make_update(), the same update that assemble builds."""
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import minitorch as mt
from minitorch import distributed
from transformer import registry

from ..cli.errors import TrainError
from ..cli.memory import during
from ..data.held_back import HELD_BACK_FILE, held_back_summary, write_held_back
from ..data.pairs import read_pairs
from ..data.tokenizer import Tokenizer, run_tokenizer
from ..data.training_pairs import TrainingPairs
from ..run import threads
from ..run.config import RunConfig, write_config
from ..run.settings import Settings
from . import training_state, validation
from .rdrop import RDropStep
from .step import TrainStep, make_optimizer
from .trainer import Trainer
from .validation import ValidationData


@dataclass
class RunParts:
    """What a Trainer trains with, built by assemble()."""
    settings: Settings
    config: RunConfig
    run_dir: Path
    device: str
    world: distributed.World
    tok: Tokenizer
    training_pairs: TrainingPairs
    validation: ValidationData
    model: mt.nn.Module
    optimizer: mt.optim.Adam  # Adam, or AdamW with weight decay, over the model's FlatParameters
    schedule: mt.optim.lr_scheduler.LRScheduler   # WarmupSchedule (LambdaLR with ramp=False)
    step_fn: TrainStep        # TrainStep or RDropStep, with the gradient sync of a job of several ranks
    blas_check: threads.StepCheck
    metrics_path: Path


class Update(NamedTuple):
    """The parts of fit's update of a model, built by make_update()."""
    flat: mt.nn.utils.FlatParameters
    optimizer: mt.optim.Adam
    schedule: mt.optim.lr_scheduler.LRScheduler   # WarmupSchedule (LambdaLR with ramp=False)
    step_fn: TrainStep


def make_update(model, recipe, d_model, device, world=None, rdrop=None, sync_of=None, ramp=True, precision=None):
    """fit's update of a model: its FlatParameters (the update, clipping and the sum over ranks work on them whole),
    Adam (AdamW with weight decay) with the warm-up schedule, the gradient sync of a job of several ranks, and the
    step (RDropStep when rdrop > 0). recipe: Settings or a Preset (lr, warmup, weight_decay, label_smoothing,
    clip_norm, rdrop, precision); what the bench and the experiments change is an argument: rdrop and precision
    override the recipe's,
    sync_of(flat) makes the sync (the bench's times itself; None: fit's, over world's ranks when it has several),
    and ramp=False drops the warm-up's linear rise (step.make_optimizer; experiment depth)."""
    flat = mt.nn.utils.FlatParameters(model)
    optimizer, schedule = make_optimizer(flat, recipe.lr, recipe.warmup, d_model, recipe.weight_decay, ramp)
    if sync_of is not None:
        sync = sync_of(flat)
    else:
        sync = distributed.GradientSync(flat, world) if world is not None and world.size > 1 else None
    step_args = (model, optimizer, schedule, recipe.label_smoothing, recipe.clip_norm, device, sync)
    alpha = recipe.rdrop if rdrop is None else rdrop
    precision = recipe.precision if precision is None else precision
    step = RDropStep(*step_args, alpha=alpha, precision=precision) if alpha else TrainStep(*step_args,
                                                                                           precision=precision)
    return Update(flat, optimizer, schedule, step)


def assemble(settings, model_kw, run_dir, device, resumed=None, state=None, world=None, blas_threads=None):
    """The Trainer of a new run in run_dir (resumed: the RunConfig of the run there, which continues where it
    stopped, from `state`, its last.npz), on the corpus in settings.data_dir (data/corpus.py's prepare_corpus finds
    it). run/resolve.py's resolve_settings reads resumed and state."""
    run_dir, world, data_dir = Path(run_dir), world or distributed.World(), Path(settings.data_dir)
    main = world.is_main   # the rank that writes files and prints
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrainError(f"--run-dir {run_dir}: cannot make the folder ({e.strerror})") from None
    metrics_path = run_dir / "metrics.jsonl"
    src, tgt, extra = settings.src, settings.tgt, settings.extra_source
    with during("reading the corpus"):
        parts, held, (val_src, val_tgt) = read_pairs(data_dir, src, tgt, extra, settings.held_back)
    print(f"corpus {data_dir} ({src}->{tgt}): {len(parts[0][1])} training and {len(val_src)} validation "
          f"pairs" + (f", and {len(parts[1][1])} {extra}->{tgt} training pairs (source tags <{src}>, <{extra}>)"
                      if extra else ""))
    if held:
        print(held_back_summary(held, run_dir / HELD_BACK_FILE))
        if main and not resumed:
            write_held_back(run_dir / HELD_BACK_FILE, held)
    tok = run_tokenizer(run_dir, settings, parts, world, resumed)   # its training turns running out into OutOfMemory
    model_config = resumed.model_config if resumed else \
        registry.model_config(settings.model, tok.vocab_size, model_kw).to_dict()
    config = RunConfig(settings, model_config, blas_threads or (resumed.blas_threads if resumed else None))
    world.barrier()   # every rank has its tokenizer and has read config.json before rank 0 (re)writes it
    if main:
        write_config(run_dir, config)

    blas_check = threads.StepCheck(config, run_dir, world, device)   # more threads than one: faster?
    max_len = config.model_config["max_len"]
    with during("data encoding", "a shorter --max-len needs less"):
        training_pairs = TrainingPairs(tok, parts, src, tgt, max_len, settings, world)
        val = validation.prepare(tok, val_src, val_tgt, held, training_pairs.src, settings, max_len, data_dir)

    mt.manual_seed(settings.seed)
    with during("model build", "a smaller model (--d-model, --d-ff, --layers) needs less"):
        model = config.build_model().to(device)
        model.train()
        distributed.broadcast_parameters(model.parameters(), world)   # the same start on every rank
        if world.rank:   # dropout: each rank its own masks (rank 0 keeps the stream a one-process run has)
            mt.manual_seed(training_state.rank_seed(settings.seed, world.rank))
        update = make_update(model, settings, config.model_config.get("d_model", 1), device, world)
    run_parts = RunParts(settings, config, run_dir, device, world, tok, training_pairs, val, model, update.optimizer,
                         update.schedule, update.step_fn, blas_check, metrics_path)
    if resumed:
        with during("loading last.npz"):
            progress = training_state.load_state(run_parts, state, metrics_path)
    else:
        progress = training_state.Progress()
        if main:
            metrics_path.write_text("")
    print(f"model: {settings.model} {config.model_config}")
    print(f"parameters: {model.num_parameters():,}")
    return Trainer(run_parts, progress)
