"""A run's settings resolved from fit's command line: the preset, the flags on top of it, and what a resumed run may
and may not change; also why a folder that already holds a run is refused. Where the corpus comes from is
data/corpus.py's prepare_corpus; the Settings object itself is settings.py.
"""
import math
from typing import NamedTuple

from transformer import registry
from transformer.config import Mismatch
from transformer.registry import MAX_LEN_A, MAX_LEN_B

from . import checkpoint
from ..cli.errors import TrainError, UsageError
from .config import RunConfig, config_path, open_run_dir, read_config
from .presets import PRESETS
from .settings import CHANGE, DECLARED, KEEP, SETTINGS, Settings, flag_names

# the settings a resumed run may change (all others it keeps), and those that the model reads (the dropouts)
CHANGEABLE_ON_RESUME = tuple(s.name for s in SETTINGS if s.resume != KEEP)
MODEL_FIELDS = tuple(s.name for s in SETTINGS if s.model_field)
# the shortest max_len whose decoding limit (MAX_LEN_A * source + MAX_LEN_B) still leaves room for a 1-token source
MIN_MAX_LEN = math.ceil(MAX_LEN_A * 2 + MAX_LEN_B + 1)


class Resolved(NamedTuple):
    settings: Settings
    model_kw: dict | None     # the model's sizes and dropouts (None on resume: config.json's model_config holds them)
    resumed: RunConfig | None  # the resumed run's config.json, read once
    state: dict | None         # the resumed run's last.npz, read once (on the run's device)


def resolve_settings(args, run_dir, device="cpu"):
    """Resolved settings, from the preset and the flags, or from the resumed run's config.json and last.npz, each
    read here once; TrainError for a folder that holds a run when not resuming, or whose run has nothing left to do.
    run_dir: fit's run_dir_of(args), which has checked that --preset is given where it is needed."""
    name = args.preset
    given = {k: getattr(args, k) for k in flag_names() if getattr(args, k, None) is not None}
    size_flags = {k: getattr(args, k) for k in registry.SIZE_FLAGS if getattr(args, k, None) is not None}
    config = open_run_dir(run_dir, args.resume, preset_given=bool(name))
    state = checkpoint.last_state(run_dir, device)
    if args.resume:
        preset = PRESETS[name or preset_of(config, run_dir)]
        settings = resumed_settings(config, preset, given, size_flags, run_dir)
        return Resolved(settings, None, config, continuable(state, settings, run_dir))
    preset = PRESETS[name]
    kind = registry.kind_of(given.get("model", DECLARED["model"].default))
    for key in MODEL_FIELDS:
        if key in given and not kind.has_field(key):
            takes = ", ".join(DECLARED[k].flag for k in MODEL_FIELDS if kind.has_field(k))
            raise UsageError(f"{DECLARED[key].flag} is a {owners(lambda k: k.has_field(key))} setting; --model "
                             f"{kind.name} takes {takes}")
    settings = fit_defaults(preset, kind.name).with_changes(**given)
    if settings.extra_source in (settings.src, settings.tgt):
        raise UsageError(f"--extra-source {settings.extra_source}: a second source language, other than --src "
                         f"{settings.src} and --tgt {settings.tgt}")
    chosen = {k: getattr(settings, k) for k in MODEL_FIELDS if getattr(settings, k) is not None}
    model_kw = dict(preset.sizes(kind.name), **chosen)
    model_kw.update(check_sizes(kind, size_flags, model_kw, preset.name))
    if state is not None:  # a folder without a last.npz holds no training to lose
        raise TrainError(existing_run_message(run_dir, state))
    return Resolved(settings, model_kw, None, None)


def owners(has):
    """The model kinds' titles (Transformer, LSTM) of which has(kind) holds, for a message."""
    return " or ".join(dict.fromkeys(k.title for k in registry.KINDS.values() if has(k)))


def flag_of(size_flag):
    return "--" + size_flag.replace("_", "-")


def continuable(state, settings, run_dir):
    """The saved training state of a run to resume; TrainError when there is none, or when the run has finished its
    epochs or steps (nothing left to do: stop before anything is read or printed)."""
    if state is None:
        raise TrainError(f"--resume: {run_dir} holds no last.npz to continue from")
    p = state.get("progress") if isinstance(state, dict) else None
    p = p if isinstance(p, dict) else {}   # a damaged state is reported when it is loaded
    if p.get("epoch", 0) >= settings.epochs:
        raise TrainError(f"{run_dir} has finished its {settings.epochs} epoch"
                         f"{'s' if settings.epochs > 1 else ''}; pass a larger --epochs to train on")
    if settings.max_steps is not None and p.get("step", 0) >= settings.max_steps:
        raise TrainError(f"{run_dir} is at step {p['step']} already; pass a larger --max-steps")
    return state


def resumed_settings(config, preset, given, size_flags, run_dir):
    """The settings of a resumed run: its own, with this command's value of each setting that a resumed run may
    change; TrainError for a flag that would change anything else."""
    settings = config.settings
    sizes = registry.kind_of(settings.model).size_flags
    for key, value in size_flags.items():
        if key not in sizes:
            raise UsageError(f"{flag_of(key)} sets a {owners(lambda k: key in k.size_flags)} size; this run's model "
                             f"is {settings.model}")
        has = config.model_config.get(sizes[key][0])
        if has != value:
            raise TrainError(f"--resume: {flag_of(key)} {value} differs from the run's {has}; a resumed run keeps "
                             f"its model sizes")
    changeable = [DECLARED[k].flag for k in CHANGEABLE_ON_RESUME]
    for key, value in given.items():
        if key not in CHANGEABLE_ON_RESUME and getattr(settings, key) != value:
            raise TrainError(f"--resume: {DECLARED[key].flag} {value} differs from the run's "
                             f"{getattr(settings, key)}; a resumed run keeps its settings (only "
                             f"{', '.join(changeable[:-1])} and {changeable[-1]} may change)")
    if settings.preset != preset.name:
        raise TrainError(f"--resume: {run_dir} was trained with --preset {settings.preset}, not {preset.name}")
    changed = {s.name: given.get(s.name, getattr(settings, s.name) if s.resume == CHANGE else s.default)
               for s in SETTINGS if s.resume != KEEP}
    return settings.with_changes(**changed)


def preset_of(config, run_dir):
    """The preset a resumed run was trained with (its config.json's); TrainError when it is no longer one."""
    name = config.settings.preset
    if name not in PRESETS:
        raise TrainError(f"{config_path(run_dir)}: preset {name!r} is not one of {', '.join(PRESETS)}; "
                         f"pass --preset")
    return name


def fit_defaults(preset, model=DECLARED["model"].default):
    """The Settings `fit --preset P --model M` takes when no other flag is given (the corpus is added later): the
    preset's values, and the model's dropouts from its sizes (None where the kind has no such field)."""
    kind, sizes = registry.kind_of(model), preset.sizes(model)
    model_fields = {k: sizes.get(k, kind.field_default(k)) if kind.has_field(k) else None for k in MODEL_FIELDS}
    return Settings(**preset.to_dict(), preset=preset.name, model=model, **model_fields)


def check_sizes(kind, size_flags, model_kw, preset):
    """The configuration fields that the size flags set; UsageError (exit status 2) when they cannot make a model
    (the configuration's own check, each value named by where it came from: a flag or the preset)."""
    for key in size_flags:
        if key not in kind.size_flags:
            raise UsageError(f"{flag_of(key)} sets a {owners(lambda k: key in k.size_flags)} size; --model "
                             f"{kind.name} takes only {', '.join(flag_of(k) for k in kind.size_flags)}")
    out = {field: value for key, value in size_flags.items() for field in kind.size_flags[key]}
    sizes = dict(model_kw, **out)
    if "max_len" in size_flags and sizes["max_len"] < MIN_MAX_LEN:
        raise UsageError(f"--max-len {sizes['max_len']} is too short: at least {MIN_MAX_LEN} tokens, so that "
                         f"decoding has room for {MAX_LEN_A} x the source length + {MAX_LEN_B}")
    try:
        registry.model_config(kind.name, 8, sizes)  # any vocabulary size: only the sizes are checked here
    except Mismatch as e:
        def origin(field):
            flag = next((k for k in size_flags if field in kind.size_flags[k]), None)
            return f"{flag_of(flag)} {sizes[field]}" if flag else f"{field} {sizes[field]} of --preset {preset}"
        first, second = e.fields
        raise UsageError(f"{origin(first)} {e.relation} {origin(second)}: {e.reason}") from None
    except ValueError as e:
        raise UsageError(f"bad model configuration: {e}") from None
    return out


def existing_run_message(run_dir, state):
    """Why fit (without --resume) will not start in a folder that holds a run (state: its last.npz), and what to do
    instead."""
    afresh = "or start afresh in another --run-dir (or delete the folder)"
    try:
        progress = state["progress"]
        epochs = read_config(run_dir).settings.epochs
    except (TrainError, KeyError, TypeError):
        return f"{run_dir} already holds a run; add --resume to continue it, {afresh}"
    if progress["epoch"] >= epochs:
        return (f"{run_dir} already holds a run that finished its {epochs} epoch{'s' if epochs > 1 else ''}; "
                f"translate or evaluate with it (--run-dir {run_dir}), train it further with --resume --epochs N, "
                f"{afresh}")
    return (f"{run_dir} already holds a run stopped at step {progress['step']} (epoch {progress['epoch'] + 1} of "
            f"{epochs}); add --resume to continue it, {afresh}")
