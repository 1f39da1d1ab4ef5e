"""A run folder: what `fit` writes and what `evaluate`, `translate` and `plot` read back.

    config.json     the settings, the model configuration, the corpus folder and languages (config.py)
    spm.model       the joint SentencePiece model
    metrics.jsonl   one JSON record per line: {"kind": "train", ...} every few steps, {"kind": "epoch", ...} per epoch
    *.npz           checkpoints (see checkpoint.py)
"""
import sys
from pathlib import Path

from . import checkpoint
from ..cli.errors import TrainError
from ..data.tokenizer import Tokenizer, source_tag_language


def checkpoint_name(run_dir, requested=None, quiet=False, preferred="best"):
    """The checkpoint a command loads: the one asked for, else preferred (best or the run's preset's choice), else
    (with a note on stderr) last, which a run stopped before the end of its first epoch has alone."""
    if requested is not None:
        return requested
    if checkpoint.checkpoint_path(run_dir, preferred).is_file() or \
            not checkpoint.checkpoint_path(run_dir, "last").is_file():
        return preferred
    if not quiet:
        print(f"note: {run_dir} has no {preferred}.npz yet (it is written at the end of each epoch); using last.npz",
              file=sys.stderr)
    return "last"


def load_model(run_dir, config, name="best", device="cpu"):
    """The model of a run with the weights of checkpoint `name` (best, last or avg), in eval mode."""
    path = checkpoint.checkpoint_path(run_dir, name)
    if not path.is_file():
        present = [n for n in checkpoint.CHECKPOINTS if checkpoint.checkpoint_path(run_dir, n).is_file()]
        raise TrainError(f"{path}: no such checkpoint" + (
            f"; this run has {', '.join(present)}: add --checkpoint {present[0]}" if present else
            "; the run has saved none yet (fit saves last at the end of each epoch, when stopped, and every "
            "--save-every steps)"))
    model = checkpoint.load_weights(config.build_model(), path)
    return model.to(device).eval()


def load_tokenizer(run_dir, settings):
    """The run's tokenizer, with its source-language tag when it was trained with --extra-source."""
    return Tokenizer(Path(run_dir) / "spm.model", source_tag_language(settings))
