"""A run folder: what `fit` writes and what `evaluate`, `translate` and `plot` read back.

    config.json     the settings, the model configuration, the corpus folder and languages
    spm.model       the joint SentencePiece model
    metrics.jsonl   one JSON record per line: {"kind": "train", ...} every few steps, {"kind": "epoch", ...} per epoch
    *.npz           checkpoints (see checkpoint.py)
"""
import json
import os
import sys
from pathlib import Path

from minitorch import backend
from transformer import registry

from . import checkpoint
from ..cli.errors import TrainError
from .presets import DECODING
from ..data.tokenizer import Tokenizer, source_tag_language
from ..cli.prog import PROG


def config_path(run_dir):
    return Path(run_dir) / "config.json"


def write_config(run_dir, config):
    path = config_path(run_dir)
    tmp = path.with_name(".config.json.tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def file_in_the_way(folder):
    """The file (not a folder) at `folder` or at one of the folders above it, if there is one; else None."""
    for path in (Path(folder), *Path(folder).parents):
        if path.exists():
            return None if path.is_dir() else path
    return None


def check_new_run_dir(run_dir):
    """TrainError when fit could not make the run folder because a file stands where a folder must be."""
    blocker = file_in_the_way(run_dir)
    if blocker is not None:
        where = "" if blocker == Path(run_dir) else f" ({blocker} in its path is a file)"
        raise TrainError(f"--run-dir {run_dir}: a file, not a folder{where}; fit writes its run into a folder: give "
                         f"the name of a new one")


def load_config(run_dir):
    """The config.json of a run folder, checked; TrainError naming the folder or file when it cannot be read."""
    path = config_path(run_dir)
    blocker = file_in_the_way(run_dir)
    if blocker == Path(run_dir):
        raise TrainError(f"--run-dir {run_dir}: a file, not a folder; give the run folder that `{PROG} fit` "
                         f"made (it holds config.json)")
    if not Path(run_dir).is_dir():
        raise TrainError(f"--run-dir {run_dir}: no such folder" + (f" ({blocker} in its path is a file)" if blocker
                                                                   else ""))
    if not path.is_file():
        raise TrainError(f"{path}: not found; is {run_dir} a run folder made by `{PROG} fit`?")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TrainError(f"{path}: not valid JSON ({e})") from None
    settings = config.get("settings") if isinstance(config, dict) else None
    missing = ([] if isinstance(settings, dict) else ["settings"]) + [
        k for k in ("model", "preset", "src", "tgt") if isinstance(settings, dict) and k not in settings] + (
        [] if isinstance(config, dict) and isinstance(config.get("model_config"), dict) else ["model_config"])
    if missing:
        raise TrainError(f"{path}: not a run configuration written by `{PROG} fit` (no "
                         f"{', '.join(missing)})")
    return config


def check_device(device):
    """The device name, or TrainError saying why it cannot be used."""
    try:
        return backend.check_device(device)
    except (RuntimeError, ValueError) as e:
        raise TrainError(str(e)) from None


def build_model(config):
    """A freshly initialised model from a run's config (model kind and its configuration); TrainError naming what
    is wrong."""
    try:
        return registry.build_model(config["settings"]["model"], config["model_config"])
    except ValueError as e:
        raise TrainError(f"bad model configuration: {e}") from None


def decoding(config, args):
    """{checkpoint, beam, length_penalty}: each flag where given, else the run's preset's choice (made on
    validation), else presets.DECODING (runs from before presets chose)."""
    chosen = dict(DECODING, **config["settings"].get("decoding", {}))
    return {k: chosen[k] if getattr(args, k, None) is None else getattr(args, k) for k in DECODING}


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
    model = checkpoint.load_weights(build_model(config), path)
    return model.to(device).eval()


def load_tokenizer(run_dir):
    """The run's tokenizer, with its source-language tag when it was trained with --extra-source."""
    return Tokenizer(Path(run_dir) / "spm.model", source_tag_language(load_config(run_dir)["settings"]))
