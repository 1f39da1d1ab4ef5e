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
from minitorch import backend

from ..cli.errors import TrainError

CHECKPOINTS = ("best", "last", "avg")


def checkpoint_path(run_dir, name):
    return Path(run_dir) / f"{name}.npz"


def last_state(run_dir, device="cpu"):
    """The training state in run_dir's last.npz (on device), or None when the folder holds none."""
    path = checkpoint_path(run_dir, "last")
    return load(path, device) if path.is_file() else None


def save_model(path, model, **meta):
    """Write the model's weights, its class name and plain values (epoch, step, scores) to path."""
    mt.save({"model": model.state_dict(), "model_class": type(model).__name__, **meta}, path)


def load_weights(model, path, stored=None):
    """Copy the weights stored at path (or in `stored`, the dict already read from it) into model.

    TrainError naming the file when they belong to another kind of model, miss or add tensors, have a shape that does
    not fit (naming the tensor and both shapes) or hold nan/inf; the model is left unchanged then.
    """
    stored = load(path) if stored is None else stored
    weights = stored.get("model") if isinstance(stored, dict) else None
    if not isinstance(weights, dict):
        raise TrainError(f"{path}: holds no model weights; is it a checkpoint written by `python -m train fit`?")
    kind, expected = stored.get("model_class"), type(model).__name__
    if kind is not None and kind != expected:
        raise TrainError(f"{path}: holds the weights of a {kind}, but this run's model is a {expected} (a checkpoint "
                         f"from a run of another --model?)")
    own = model.state_dict()
    missing = [k for k in own if k not in weights]
    unexpected = [k for k in weights if k not in own]
    if missing or unexpected:
        parts = ([f"{len(missing)} of the model's {len(own)} tensors are missing (first: {missing[0]})"] if missing
                 else []) + ([f"{len(unexpected)} are not the model's (first: {unexpected[0]})"] if unexpected else [])
        raise TrainError(f"{path}: does not fit the {expected} of this run: {'; '.join(parts)}")
    for name, target in own.items():
        value = weights[name]
        shape = tuple(value.shape)
        if shape != target.shape:
            raise TrainError(f"{path}: tensor {name} has shape {shape} in the checkpoint but {target.shape} in the "
                             f"{expected} of this run (made with another model configuration?)")
        array = value.data if isinstance(value, mt.Tensor) else value
        if not bool(backend.xp_of(array).isfinite(array).all()):
            raise TrainError(f"{path}: tensor {name} holds nan or inf values; the run that wrote it had diverged")
    model.load_state_dict(weights)
    return model


def remove_temporary_files(run_dir):
    """Delete the temporary files of saves that were killed before their rename (never a checkpoint itself)."""
    for p in Path(run_dir).glob(".tmp-*.npz"):
        p.unlink(missing_ok=True)


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
