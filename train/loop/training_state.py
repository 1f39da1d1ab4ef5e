"""What `last.npz` holds so that a run continues exactly: weights, optimizer, schedule, every rank's random state
and the position in the epoch; saving it, and loading it into a Trainer."""
import os

import numpy as np

import minitorch as mt
from minitorch import backend

from . import checkpoint
from ..errors import TrainError


def state(trainer):
    """The whole training state (in a job of several ranks, a collective: it gathers their random states)."""
    rng = {"rng": backend.get_rng_state()}
    if trainer.world.size > 1:
        ranks = trainer.world.allgather_object(rng["rng"])
        rng = {"rng": ranks[0], "rng_ranks": ranks}
    return {"model": trainer.model.state_dict(), "model_class": type(trainer.model).__name__,
            "optimizer": trainer.optimizer.state_dict(), "schedule": trainer.schedule.state_dict(), **rng,
            "progress": {"step": trainer.step, "epoch": trainer.epoch, "batch_pos": trainer.batch_pos,
                         "best_bleu": trainer.best_bleu, "metrics_lines": trainer.metrics_lines,
                         "epoch_loss": trainer.epoch_loss, "epoch_tokens": trainer.epoch_tokens,
                         "window": trainer.window, "epoch_skipped": trainer.epoch_skipped}}


def save_last(trainer):
    """Write the training state as `last` (every rank takes part; rank 0 writes)."""
    snapshot = state(trainer)
    if trainer.main:
        mt.save(snapshot, checkpoint.checkpoint_path(trainer.run_dir, "last"))


def load_state(trainer, state):
    """Put a saved training state into trainer: weights, optimizer, schedule, random state, progress."""
    path = checkpoint.checkpoint_path(trainer.run_dir, "last")
    checkpoint.load_weights(trainer.model, path, state)
    try:
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.schedule.load_state_dict(state["schedule"])
        load_rng(trainer, state)
        p = state["progress"]
        trainer.step, trainer.epoch, trainer.batch_pos = p["step"], p["epoch"], p["batch_pos"]
        trainer.best_bleu, trainer.metrics_lines = p["best_bleu"], p["metrics_lines"]
        trainer.epoch_loss, trainer.epoch_tokens, trainer.window = p["epoch_loss"], p["epoch_tokens"], p["window"]
        trainer.epoch_skipped = p.get("epoch_skipped", 0)
    except (KeyError, ValueError, TypeError) as e:
        raise TrainError(f"{path}: not a training state that this run can continue from ({type(e).__name__}: "
                         f"{e}); it holds model weights only, or was written by another version") from None
    if not trainer.main:
        return
    # records written after the checkpoint (by a run that was killed) are dropped, so none appears twice
    lines = trainer.metrics_path.read_text(encoding="utf-8").splitlines(keepends=True) \
        if trainer.metrics_path.is_file() else []
    # whole or not at all, as `plot` may read it meanwhile: a temporary file, then a rename
    tmp = trainer.metrics_path.with_name(f".{trainer.metrics_path.name}.tmp")
    tmp.write_text("".join(lines[:trainer.metrics_lines]), encoding="utf-8")
    os.replace(tmp, trainer.metrics_path)


def load_rng(trainer, state):
    """Each rank's random state from the checkpoint; a rank that the saving job did not have (it had fewer
    ranks) draws a fresh one from the seed, its rank and the step. A run continued on another device than it was
    saved on says what cannot continue exactly: the dropout draws (each device has its own generator)."""
    ranks = state.get("rng_ranks") or [state["rng"]]
    if not (trainer.world.rank < len(ranks) and (trainer.world.rank == 0 or len(ranks) == trainer.world.size)):
        mt.manual_seed(rank_seed(trainer.s["seed"], trainer.world.rank, state["progress"]["step"]))
        return
    saved = ranks[trainer.world.rank]
    if not backend.set_rng_state(saved, trainer.device):
        why = "trained on another device" if "cuda" not in saved else "saved on a GPU of another size"
        note = (f"note: the checkpoint holds no random state for {trainer.device} ({why}): the weights, optimizer, "
                f"schedule and batch order continue exactly, the dropout draws start afresh from the seed")
    elif trainer.device == "cpu" and "cuda" in saved:
        note = ("note: the run was trained on cuda and continues on cpu: the weights, optimizer, schedule and batch "
                "order continue exactly, the dropout draws come from the CPU's generator instead")
    else:
        return
    if trainer.main:
        print(note)


def rank_seed(seed, rank, step=0):
    """The seed of a rank's random numbers (dropout) in a data-parallel job: distinct for each rank and start."""
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])
