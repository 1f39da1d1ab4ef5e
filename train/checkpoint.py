"""Checkpoint files in a run folder, all written atomically by mt.save (temporary file, then rename).

    last.npz       the whole training state: model, optimizer, schedule, RNG, step, position in the epoch
    best.npz       the model with the best validation BLEU so far
    epoch-N.npz    the model after epoch N (only the last k are kept)
    avg.npz        the average of the weights in the kept epoch-N files
"""
import re
from pathlib import Path

import numpy as np

import minitorch as mt

from .errors import TrainError

CHECKPOINTS = ("best", "last", "avg")


def checkpoint_path(run_dir, name):
    return Path(run_dir) / f"{name}.npz"


def save_model(path, model, **meta):
    """Write the model's weights plus plain values (epoch, step, scores) to path."""
    mt.save({"model": model.state_dict(), **meta}, path)


def load(path, device="cpu"):
    """The dict stored at path; TrainError naming the file when it is missing or damaged."""
    path = Path(path)
    if not path.is_file():
        raise TrainError(f"{path}: no such checkpoint")
    try:
        return mt.load(path, device=device)
    except ValueError as e:
        raise TrainError(str(e)) from None


def epoch_snapshots(run_dir):
    """The epoch-N.npz files of a run, oldest first."""
    found = [(int(m.group(1)), p) for p in Path(run_dir).glob("epoch-*.npz")
             if (m := re.fullmatch(r"epoch-(\d+)\.npz", p.name))]
    return [p for _, p in sorted(found)]


def keep_last_snapshots(run_dir, k):
    """Delete all but the newest k epoch-N.npz files; returns the kept ones, oldest first."""
    snapshots = epoch_snapshots(run_dir)
    for p in snapshots[:-k] if k > 0 else snapshots:
        p.unlink()
    return snapshots[-k:] if k > 0 else []


def average_states(paths):
    """The elementwise mean of the model weights stored in paths (accumulated in float64)."""
    if not paths:
        raise TrainError("no checkpoints to average")
    total = None
    for path in paths:
        state = load(path)["model"]
        arrays = {k: v.numpy().astype(np.float64) for k, v in state.items()}
        if total is None:
            total = arrays
        else:
            if arrays.keys() != total.keys():
                raise TrainError(f"{path}: holds other weights than {paths[0]}; cannot average them")
            for k in total:
                total[k] += arrays[k]
    return {k: (v / len(paths)).astype(np.float32) for k, v in total.items()}
