"""What `last.npz` holds so that a run continues exactly: weights, optimizer, schedule, every rank's random state
and the position in the epoch (Progress); saving it, and loading it into the parts of a run."""
import os
from dataclasses import asdict, dataclass, field

import numpy as np

import minitorch as mt
from minitorch import backend

from ..run import checkpoint
from ..cli.errors import TrainError


@dataclass
class Progress:
    """Where a run stands: the counters a Trainer advances, saved in `last.npz` (as its "progress") and loaded back
    as one."""
    step: int = 0
    epoch: int = 0
    batch_pos: int = 0   # the next batch of the epoch's batch order
    best_bleu: float = -1.0
    metrics_lines: int = 0   # records in metrics.jsonl; a resumed run drops any written after its checkpoint
    epoch_loss: float = 0.0
    epoch_tokens: int = 0
    window: dict = field(default_factory=lambda: {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0})
    epoch_skipped: int = 0   # batches skipped this epoch for a nan/inf loss or gradient norm
    epoch_overflows: int = 0   # fp16: batches skipped this epoch because the scaled gradients overflowed
    overflows: int = 0         # fp16: such batches in the whole run

    def add_step(self, loss, tokens, seconds, lr):
        """Count an applied step: its batch's loss and target tokens in the epoch's and the window's statistics (the
        steps since the last train record), its seconds and learning rate in the window's."""
        self.step += 1
        self.epoch_loss += loss * tokens
        self.epoch_tokens += tokens
        w = self.window
        w["loss"] += loss
        w["steps"] += 1
        w["tokens"] += tokens
        w["time"] += seconds
        w["lr"] = lr

    @classmethod
    def from_dict(cls, p):
        return cls(step=p["step"], epoch=p["epoch"], batch_pos=p["batch_pos"], best_bleu=p["best_bleu"],
                   metrics_lines=p["metrics_lines"], epoch_loss=p["epoch_loss"], epoch_tokens=p["epoch_tokens"],
                   window=p["window"], epoch_skipped=p.get("epoch_skipped", 0),   # older runs: no epoch_skipped,
                   epoch_overflows=p.get("epoch_overflows", 0), overflows=p.get("overflows", 0))   # no overflows


def state(trainer):
    """The whole training state (in a job of several ranks, a collective: it gathers their random states)."""
    rng = {"rng": backend.get_rng_state()}
    if trainer.world.size > 1:
        ranks = trainer.world.allgather_object(rng["rng"])
        rng = {"rng": ranks[0], "rng_ranks": ranks}
    scaler = trainer.step_fn.scaler   # fp16's loss scale and its count of clean steps, for an exact resume
    return {"model": trainer.model.state_dict(), "model_class": type(trainer.model).__name__,
            "optimizer": trainer.optimizer.state_dict(), "schedule": trainer.schedule.state_dict(), **rng,
            "progress": asdict(trainer.progress), **({"scaler": scaler.state_dict()} if scaler is not None else {})}


def save_last(trainer):
    """Write the training state as `last` (every rank takes part; rank 0 writes)."""
    snapshot = state(trainer)
    if trainer.main:
        mt.save(snapshot, checkpoint.checkpoint_path(trainer.run_dir, "last"))


def load_state(parts, state, metrics_path):
    """Put a saved training state into the parts of a run (weights, optimizer, schedule, random state) and return its
    Progress; metrics.jsonl loses the records written after the checkpoint, and the run folder the temporary files
    of saves that were killed."""
    if parts.world.is_main:
        checkpoint.remove_temporary_files(parts.run_dir)
    path = checkpoint.checkpoint_path(parts.run_dir, "last")
    checkpoint.load_weights(parts.model, path, state)
    try:
        parts.optimizer.load_state_dict(state["optimizer"])
        parts.schedule.load_state_dict(state["schedule"])
        if parts.step_fn.scaler is not None:
            parts.step_fn.scaler.load_state_dict(state["scaler"])
        progress = Progress.from_dict(state["progress"])
        load_rng(parts, state)
    except (KeyError, ValueError, TypeError) as e:
        raise TrainError(f"{path}: not a training state that this run can continue from ({type(e).__name__}: "
                         f"{e}); it holds model weights only, or was written by another version") from None
    if not parts.world.is_main:
        return progress
    # records written after the checkpoint (by a run that was killed) are dropped, so none appears twice
    lines = metrics_path.read_text(encoding="utf-8").splitlines(keepends=True) if metrics_path.is_file() else []
    # whole or not at all, as `plot` may read it meanwhile: a temporary file, then a rename
    tmp = metrics_path.with_name(f".{metrics_path.name}.tmp")
    tmp.write_text("".join(lines[:progress.metrics_lines]), encoding="utf-8")
    os.replace(tmp, metrics_path)
    return progress


def load_rng(parts, state):
    """Each rank's random state from the checkpoint; a rank that the saving job did not have (it had fewer
    ranks) draws a fresh one from the seed, its rank and the step. A run continued on another device than it was
    saved on says what cannot continue exactly: the dropout draws (each device has its own generator)."""
    ranks = state.get("rng_ranks") or [state["rng"]]
    if not (parts.world.rank < len(ranks) and (parts.world.rank == 0 or len(ranks) == parts.world.size)):
        mt.manual_seed(rank_seed(parts.settings.seed, parts.world.rank, state["progress"]["step"]))
        return
    saved = ranks[parts.world.rank]
    if not backend.set_rng_state(saved, parts.device):
        why = "trained on another device" if "cuda" not in saved else "saved on a GPU of another size"
        note = (f"note: the checkpoint holds no random state for {parts.device} ({why}): the weights, optimizer, "
                f"schedule and batch order continue exactly, the dropout draws start afresh from the seed")
    elif parts.device == "cpu" and "cuda" in saved:
        note = ("note: the run was trained on cuda and continues on cpu: the weights, optimizer, schedule and batch "
                "order continue exactly, the dropout draws come from the CPU's generator instead")
    else:
        return
    if parts.world.is_main:
        print(note)


def rank_seed(seed, rank, step=0):
    """The seed of a rank's random numbers (dropout) in a data-parallel job: distinct for each rank and start."""
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])
