"""config.json: a run's settings, its model configuration and its BLAS threads, read once per command (and checked
there) and written whole."""
import json
import os
from dataclasses import dataclass
from pathlib import Path

from transformer import registry

from ..cli.errors import TrainError, UsageError
from ..cli.prog import PROG
from .settings import Settings, shown


@dataclass
class RunConfig:
    """What config.json holds."""
    settings: Settings
    model_config: dict
    blas_threads: dict | None = None   # run/threads.py's record: how many, and why

    def to_dict(self):
        out = {"settings": self.settings.to_dict(), "model_config": self.model_config}
        return dict(out, blas_threads=self.blas_threads) if self.blas_threads else out

    def build_model(self):
        """A freshly initialised model of this configuration; TrainError naming what is wrong."""
        try:
            return registry.build_model(self.settings.model, self.model_config)
        except ValueError as e:
            raise TrainError(f"bad model configuration: {e}") from None


def config_path(run_dir):
    """Where a run folder keeps its config.json."""
    return Path(run_dir) / "config.json"


def write_config(run_dir, config):
    """Write config.json whole (a temporary file, then a rename), so that a reader never sees half of it."""
    path = config_path(run_dir)
    tmp = path.with_name(".config.json.tmp")
    tmp.write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
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


def open_run_dir(run_dir, resume, preset_given):
    """fit's checks of its run folder: a folder can be made there (TrainError if a file is in the way); with
    resume, the RunConfig of the run it continues (read before the folder's check without --preset, which it names;
    whether the run left a last.npz to continue from is checked where that is loaded, resolve.continuable).
    None for a new run."""
    config = None if preset_given or not resume else read_config(run_dir)
    check_new_run_dir(run_dir)
    return (config or read_config(run_dir)) if resume else None


def read_config(run_dir):
    """The RunConfig of a run folder, checked and migrated; TrainError naming the folder or file when it cannot be
    read."""
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
    # a value of the wrong type or range (config.json edited by hand): exit status 2, as a bad flag's
    try:
        checked = Settings.from_dict(settings, f"{path}: settings.")
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:   # keys older versions did not write get the values those runs had (the configuration's defaults)
        model_config = registry.model_classes(checked.model)[0].from_dict(config["model_config"]).to_dict()
    except ValueError as e:
        raise UsageError(f"{path}: model_config: {e}") from None
    blas_threads = config.get("blas_threads")
    if blas_threads is not None and not isinstance(blas_threads, dict):
        raise UsageError(f"{path}: blas_threads holds {shown(blas_threads)}; expected an object (or no such key: "
                         f"fit measures again)")
    return RunConfig(checked, model_config, blas_threads)
