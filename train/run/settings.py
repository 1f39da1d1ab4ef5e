"""A run's settings, each declared once (SETTINGS): its name, type, default (and each preset's own), range, help, and
whether a resumed run may change it. From these declarations come the presets' values (presets.py), the typed
Settings that fit resolves and config.json records under "settings" (same keys, same order as before), the check of
each value read from config.json, the values older runs trained with (OLDER_RUNS), resume's rules (resolve.py) and
fit's flags (add_flags). Adding a setting is one Setting(...) below plus the code that reads it."""
import argparse
import json
import math
from dataclasses import asdict, dataclass, field, make_dataclass, replace

from transformer.registry import MODELS

from ..cli.arguments import PRECISION_HELP, PRECISIONS
from .checkpoint import CHECKPOINTS

# evaluate's and translate's defaults where a preset has not chosen its own on validation (and for older runs)
DECODING = {"checkpoint": "best", "beam": 5, "length_penalty": 0.6}
# what a resumed run may do with a setting given again on its command line
KEEP = "keep"          # nothing: a different value is refused (the run keeps what it trained with)
CHANGE = "change"      # change it for the rest of the run
COMMAND = "command"    # it belongs to the one command: not given, it is unset again
REQUIRED = object()    # a setting that every run's config.json has (older: no value to migrate from)


@dataclass(frozen=True)
class Check:
    """What a setting must hold: parse(text) -> value for its flag, test(value) -> bool, and the words for it in a
    message (flag_words where the flag says it otherwise)."""
    parse: object
    test: object
    expected: str
    flag_words: str = None
    choices: tuple = None   # the flag's choices, where the setting is one of a few names
    inner: object = None    # inner(value, where): ValueError naming a key inside a value that passed test

    def argparse_type(self):
        """The flag's argparse type: a bad value is an argparse error (exit status 2) saying what was expected."""
        words = self.flag_words or self.expected

        def parse(text):
            try:
                value = self.parse(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
            if not self.test(value):
                raise argparse.ArgumentTypeError(f"expected {words}, got {text}")
            return value
        return parse


def number(test, expected):
    # JSON's true and false are no numbers, and NaN or Infinity (which Python's json reads) no setting
    return Check(float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                 and (isinstance(v, int) or math.isfinite(v)) and test(v), expected)


def integer(low):
    return Check(int, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low, f"an integer >= {low}",
                 "a positive integer" if low == 1 else None)


def one_of(choices):
    return Check(str, lambda v: isinstance(v, str) and v in choices, f"one of {', '.join(choices)}",
                 choices=tuple(choices))


def optional(c):
    return Check(c.parse, lambda v: v is None or c.test(v), f"{c.expected}, or null", c.flag_words or c.expected,
                 c.choices)


NAME = Check(str, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")
POSITIVE, NON_NEGATIVE = number(lambda v: v > 0, "a positive number"), number(lambda v: v >= 0, "a number >= 0")
RATE = number(lambda v: 0 <= v < 1, "a number in [0, 1)")
COUNT, NATURAL = integer(1), integer(0)
DECODING_CHECKS = {"checkpoint": one_of(CHECKPOINTS), "beam": COUNT, "length_penalty": NON_NEGATIVE}


def _check_keys(value, where):
    """ValueError naming the first key of an object (decoding) that is none of DECODING_CHECKS or holds a bad value."""
    for key, v in value.items():
        c = DECODING_CHECKS.get(key)
        if c is None:
            raise ValueError(f"{where} has the key {shown(key)}; expected some of {', '.join(DECODING_CHECKS)}")
        if not c.test(v):
            raise ValueError(f"{where}.{key} holds {shown(v)}; expected {c.expected}")


_DECODING = Check(None, lambda v: isinstance(v, dict), f"an object with some of {', '.join(DECODING_CHECKS)}",
                  inner=_check_keys)


@dataclass(frozen=True)
class Setting:
    """One run setting, declared once.

    default: every preset's value unless `presets` gives a preset its own; model_field: a field of the model's
    configuration (a dropout), whose default is the preset's size of it and which only the kinds that have the field
    take (None in the others). help: the flag's help, "{presets}" standing for each preset's value; None: no flag
    (the preset, or the run, chooses it). resume: KEEP, CHANGE or COMMAND. older: the value of runs written before
    the setting existed (a missing key of their config.json); absent_when_none: config.json leaves the key out when
    None. preset: a value a preset chooses (else the run does: its seed, budget, corpus folder)."""
    name: str
    type: object
    default: object
    check: Check
    help: str = None
    presets: dict = field(default_factory=dict)
    resume: str = KEEP
    older: object = REQUIRED
    absent_when_none: bool = False
    model_field: bool = False
    preset: bool = True
    metavar: str = None

    @property
    def flag(self):
        return "--" + self.name.replace("_", "-")

    def default_of(self, preset_name):
        return self.presets.get(preset_name, self.default)


# config.json's "settings", in the order it writes them
SETTINGS = (
    # the data: corpus, languages, vocabulary, segmentation
    Setting("corpus", str, "multi30k", one_of(("demo", "multi30k")), presets={"demo": "demo"}),
    Setting("src", str, "de", NAME, "source language: the file suffix, e.g. de (default: the preset's)",
            presets={"demo": "en"}),
    Setting("tgt", str, "en", NAME, "target language, e.g. en (default: the preset's)", presets={"demo": "toy"}),
    Setting("vocab_size", int, 8000, COUNT, "joint SentencePiece vocabulary size, at most (default: the preset's: "
            "{presets})", presets={"demo": 500, "tiny": 2000, "small": 4000}),
    # the schedule and the update
    Setting("batch_tokens", int, 4096, COUNT, "padded tokens per batch (default: the preset's)",
            presets={"demo": 2048, "tiny": 2048, "base": 8192}),
    Setting("epochs", int, 10, COUNT, "number of epochs (default: the preset's)", resume=CHANGE,
            presets={"demo": 6, "tiny": 1, "small": 16, "base": 30}),
    Setting("lr", float, 1e-3, POSITIVE, "peak learning rate, reached at the end of warmup",
            presets={"demo": 3e-3, "tiny": 2e-3, "small": 2e-3, "base": 7e-4}),
    Setting("warmup", int, 4000, COUNT, "warmup steps of the learning-rate schedule",
            presets={"demo": 100, "tiny": 100, "small": 300, "base": 1000}),   # then lr decays as 1/sqrt(step)
    Setting("label_smoothing", float, 0.1, RATE, "label smoothing of the loss (default: the preset's)"),
    Setting("weight_decay", float, 0.0, NON_NEGATIVE, "decoupled weight decay (AdamW) of every weight (default: "
            "the preset's)", older=0.0),
    Setting("clip_norm", float, 1.0, POSITIVE),
    # checkpoints and records
    Setting("avg_last", int, 5, COUNT, presets={"demo": 2, "tiny": 1}),   # avg: the mean of the last k epochs
    Setting("val_bleu_sentences", int, 0, NATURAL, presets={"tiny": 200}),   # greedy BLEU on the first n; 0 = all
    Setting("save_every", int, 0, NATURAL, "also save `last` every N steps (0: only at the end of each epoch)",
            resume=CHANGE, presets={"small": 50, "base": 200}),
    Setting("log_every", int, 10, COUNT, presets={"demo": 5}),   # a train record in metrics.jsonl every n steps
    # the regularisers and the extra data
    Setting("bpe_dropout", float, 0.0, RATE, "BPE-dropout (subword regularisation): the training pairs are "
            "segmented anew each epoch, each candidate merge left out with probability ALPHA; validation and "
            "decoding stay deterministic (default: the preset's, 0 = off)", older=0.0, metavar="ALPHA"),
    Setting("rdrop", float, 0.0, NON_NEGATIVE, "R-Drop: each batch twice through the model (two dropout masks) and "
            "ALPHA times the symmetric KL of the two output distributions added to the loss; a step costs about "
            "twice (default: the preset's, 0 = off)", older=0.0, metavar="ALPHA"),
    Setting("extra_source", str | None, None, optional(NAME), "a second source language whose training file "
            "(train.LANG, aligned with train.SRC) joins training as LANG->TGT pairs: one shared vocabulary, each "
            "source after a language tag (<de>, <fr>); validation and decoding stay SRC->TGT (e.g. fr for "
            "Multi30k)", older=None, metavar="LANG"),
    Setting("held_back", int, 0, NATURAL, "take the N training pairs with the highest rare-word rate out of "
            "training and score them beside validation after each epoch (see train/data/held_back.py; default 0)",
            older=0, metavar="N"),
    # the training step's arithmetic: fp32, or fp16 (mixed, with loss scaling: train/loop/step.py)
    Setting("precision", str, "fp32", one_of(PRECISIONS), PRECISION_HELP + " (default: the preset's)", older="fp32"),
    # decoding: evaluate's and translate's defaults
    Setting("decoding", dict, DECODING, _DECODING, older=DECODING,
            presets={"small": {"checkpoint": "avg", "beam": 8, "length_penalty": 1.4}}),
    # the preset it started from, the model kind and its dropouts
    Setting("preset", str | None, None, optional(NAME), preset=False),
    Setting("model", str, "transformer", one_of(MODELS), "the architecture (default: transformer)", preset=False),
    Setting("seed", int, 0, NATURAL, "seed of initialisation, dropout and data order (default 0)", preset=False),
    Setting("max_steps", int | None, None, optional(COUNT), "stop after this many steps in all, validating at the "
            "end", resume=COMMAND, preset=False),   # a step budget belongs to one command, not to the run
    Setting("dropout", float, 0.1, RATE, "dropout rate (default: the preset's)", model_field=True, preset=False),
    Setting("attention_dropout", float | None, None, optional(RATE), "Transformer: dropout on the attention "
            "weights (default: the preset's)", absent_when_none=True, model_field=True, preset=False),
    Setting("activation_dropout", float | None, None, optional(RATE), "Transformer: dropout on the feed-forward "
            "network's hidden units (default: the preset's)", absent_when_none=True, model_field=True, preset=False),
    # the corpus folder, set once the corpus is found (fit's --data-dir names where to look)
    Setting("data_dir", str | None, None, optional(NAME), absent_when_none=True, preset=False),
)
DECLARED = {s.name: s for s in SETTINGS}
# derived: each setting's check, and the keys that older config.json files lack with the value those runs used
CHECKS = {s.name: s.check for s in SETTINGS}
OLDER_RUNS = {s.name: s.older for s in SETTINGS if s.older is not REQUIRED}


def _field_default(value):
    # a dict default (decoding) is each Settings's own copy
    return field(default_factory=lambda: dict(value)) if isinstance(value, dict) else value


class _SettingsMethods:
    @classmethod
    def from_dict(cls, d, where="settings."):
        """The settings that config.json records (older runs migrated, each value checked: ValueError from check,
        naming `where` and the key); keys of no field are left out."""
        d = migrate(d)
        check(d, where)
        return cls(**{k: v for k, v in d.items() if k in DECLARED})

    def to_dict(self):
        """config.json's "settings"."""
        return {k: v for k, v in asdict(self).items() if not (DECLARED[k].absent_when_none and v is None)}

    def with_changes(self, **changes):
        """A copy with some settings changed (a resumed run's --epochs, the corpus folder once found)."""
        return replace(self, **changes)


Settings = make_dataclass("Settings", [(s.name, s.type, _field_default(s.default)) for s in SETTINGS],
                          bases=(_SettingsMethods,), frozen=True)
Settings.__module__ = __name__   # (Python 3.12 takes it as an argument)
Settings.__doc__ = "Everything a run trained with, apart from the model's sizes (config.json's model_config)."


def setting_values(preset_name):
    """The values a preset chooses, by name (presets.Preset's)."""
    return {s.name: _copy(s.default_of(preset_name)) for s in SETTINGS if s.preset}


def _copy(value):
    return dict(value) if isinstance(value, dict) else value


def add_flags(parser, presets):
    """fit's flag for each declared setting that has help, its type from the setting's check, its help naming each
    preset's value where it says "{presets}" (presets: presets.PRESETS). Each flag's default is None: a flag not
    given leaves the preset's value (or the run's, on resume)."""
    for s in SETTINGS:
        if s.help is None:
            continue
        kw = {"metavar": s.metavar} if s.metavar else {}
        if s.check.choices:
            kw["choices"] = s.check.choices
        elif s.check.parse is not str:
            kw["type"] = s.check.argparse_type()
        text = s.help if "{presets}" not in s.help else s.help.format(
            presets=", ".join(f"{name} {getattr(p, s.name):,}" for name, p in presets.items()))
        parser.add_argument(s.flag, default=None, help=text, **kw)


def flag_names():
    """The settings that fit takes as flags."""
    return tuple(s.name for s in SETTINGS if s.help is not None)


def migrate(d):
    """config.json's settings of any version as this version writes them: the keys earlier versions did not write
    get the value those runs used."""
    return {**{k: _copy(v) for k, v in OLDER_RUNS.items() if k not in d}, **d}


def check(d, where="settings."):
    """ValueError naming the first key of settings `d` (migrated) that is missing or holds a value of the wrong
    type or range: where (the file and "settings.") and the key, the value and what was expected."""
    for s in SETTINGS:
        key, c = s.name, s.check
        if key not in d and not s.absent_when_none:
            raise ValueError(f"{where}{key} is missing (expected {c.expected})")
        if key in d and not c.test(d[key]):
            raise ValueError(f"{where}{key} holds {shown(d[key])}; expected {c.expected}")
        if key in d and c.inner is not None:
            c.inner(d[key], f"{where}{key}")


def shown(value, width=60):
    """A value as config.json writes it (a string in quotes, null, true), cut to `width` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."

