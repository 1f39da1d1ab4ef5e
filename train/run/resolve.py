"""A run's settings resolved from fit's command line: the preset, the flags on top of it, and what a resumed run may
and may not change; also why a folder that already holds a run is refused. Where the corpus comes from is
data/corpus.py's prepare_corpus; the Settings object itself is settings.py.
"""
import math
from typing import NamedTuple

from transformer import registry
from transformer.registry import MAX_LEN_A, MAX_LEN_B

from . import checkpoint
from ..cli.errors import TrainError, UsageError
from .config import RunConfig, config_path, open_run_dir, read_config
from .presets import PRESETS
from .settings import Settings

# Flags that override a preset's setting of the same name; a resumed run keeps all of them except these:
OVERRIDES = ("src", "tgt", "vocab_size", "batch_tokens", "epochs", "lr", "warmup", "dropout", "attention_dropout",
             "activation_dropout", "label_smoothing", "weight_decay", "save_every", "bpe_dropout", "rdrop",
             "extra_source", "held_back", "precision")
TRANSFORMER_DROPOUTS = ("attention_dropout", "activation_dropout")   # model fields that an LSTM does not have
CHANGEABLE_ON_RESUME = ("epochs", "max_steps", "save_every")
# Flags that override a preset's model size: flag -> the configuration fields it sets, for each model kind
SIZE_FLAGS = {
    "transformer": {"d_model": ("d_model",), "n_heads": ("n_heads",), "d_ff": ("d_ff",),
                    "layers": ("n_encoder_layers", "n_decoder_layers"), "max_len": ("max_len",)},
    "lstm": {"layers": ("n_layers",), "max_len": ("max_len",)},
}
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
    given = {k: getattr(args, k) for k in OVERRIDES + ("seed", "model", "max_steps") if getattr(args, k) is not None}
    size_flags = {k: getattr(args, k, None) for k in SIZE_FLAGS["transformer"] if getattr(args, k, None) is not None}
    config = open_run_dir(run_dir, args.resume, preset_given=bool(name))
    state = checkpoint.last_state(run_dir, device)
    if args.resume:
        preset = PRESETS[name or preset_of(config, run_dir)]
        settings = resumed_settings(config, preset, given, size_flags, run_dir)
        return Resolved(settings, None, config, continuable(state, settings, run_dir))
    preset = PRESETS[name]
    model = given.get("model", "transformer")
    for key in TRANSFORMER_DROPOUTS:
        if model != "transformer" and key in given:
            raise UsageError(f"--{key.replace('_', '-')} is a Transformer setting; --model {model} takes --dropout")
    settings = fit_defaults(preset, model).with_changes(**given)
    if settings.extra_source in (settings.src, settings.tgt):
        raise UsageError(f"--extra-source {settings.extra_source}: a second source language, other than --src "
                         f"{settings.src} and --tgt {settings.tgt}")
    dropouts = {k: getattr(settings, k) for k in ("dropout", *TRANSFORMER_DROPOUTS) if getattr(settings, k) is not None}
    model_kw = dict(preset.sizes(model), **dropouts)
    model_kw.update(check_sizes(settings.model, size_flags, model_kw, preset.name))
    if state is not None:  # a folder without a last.npz holds no training to lose
        raise TrainError(existing_run_message(run_dir, state))
    return Resolved(settings, model_kw, None, None)


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
    """The settings of a resumed run: its own, with this command's --epochs, --max-steps and --save-every; TrainError
    for a flag that would change anything else."""
    settings = config.settings
    fields = SIZE_FLAGS["transformer" if settings.model == "transformer" else "lstm"]
    for key, value in size_flags.items():
        if key not in fields:
            raise UsageError(f"--{key.replace('_', '-')} sets a Transformer size; this run's model is "
                             f"{settings.model}")
        has = config.model_config.get(fields[key][0])
        if has != value:
            raise TrainError(f"--resume: --{key.replace('_', '-')} {value} differs from the run's {has}; a resumed "
                             f"run keeps its model sizes")
    for key, value in given.items():
        if key not in CHANGEABLE_ON_RESUME and getattr(settings, key) != value:
            raise TrainError(f"--resume: --{key.replace('_', '-')} {value} differs from the run's "
                             f"{getattr(settings, key)}; a resumed run keeps its settings (only --epochs, "
                             f"--max-steps and --save-every may change)")
    if settings.preset != preset.name:
        raise TrainError(f"--resume: {run_dir} was trained with --preset {settings.preset}, not {preset.name}")
    changed = {k: given[k] for k in CHANGEABLE_ON_RESUME if k in given}
    return settings.with_changes(**dict(changed, max_steps=given.get("max_steps")))


def preset_of(config, run_dir):
    """The preset a resumed run was trained with (its config.json's); TrainError when it is no longer one."""
    name = config.settings.preset
    if name not in PRESETS:
        raise TrainError(f"{config_path(run_dir)}: preset {name!r} is not one of {', '.join(PRESETS)}; "
                         f"pass --preset")
    return name


def fit_defaults(preset, model="transformer"):
    """The Settings `fit --preset P --model M` takes when no other flag is given (the corpus is added later)."""
    chosen = {k: v for k, v in preset.to_dict().items() if k not in ("name", "description", "model", "lstm")}
    sizes = preset.sizes(model)
    dropouts = {k: sizes.get(k, 0.0) for k in TRANSFORMER_DROPOUTS} if model == "transformer" else {}
    return Settings(**chosen, preset=preset.name, model=model, seed=0, max_steps=None, dropout=sizes["dropout"],
                    **dropouts)


def check_sizes(kind, size_flags, model_kw, preset):
    """The configuration fields that the size flags set; UsageError (exit status 2) when they cannot make a model."""
    fields = SIZE_FLAGS["transformer" if kind == "transformer" else "lstm"]
    for key in size_flags:
        if key not in fields:
            raise UsageError(f"--{key.replace('_', '-')} sets a Transformer size; --model {kind} takes only "
                             f"{', '.join('--' + k.replace('_', '-') for k in fields)}")
    out = {field: value for key, value in size_flags.items() for field in fields[key]}
    sizes = dict(model_kw, **out)
    if "max_len" in size_flags and sizes["max_len"] < MIN_MAX_LEN:
        raise UsageError(f"--max-len {sizes['max_len']} is too short: at least {MIN_MAX_LEN} tokens, so that "
                         f"decoding has room for {MAX_LEN_A} x the source length + {MAX_LEN_B}")
    if kind == "transformer" and sizes["d_model"] % sizes["n_heads"]:
        def origin(key):
            return f"--{key.replace('_', '-')} {sizes[key]}" if key in size_flags else \
                f"{key} {sizes[key]} of --preset {preset}"
        raise UsageError(f"{origin('d_model')} is not divisible by {origin('n_heads')}: each head takes "
                         f"d_model / n_heads dimensions")
    try:
        registry.model_config(kind, 8, sizes)  # any vocabulary size: only the sizes are checked here
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
