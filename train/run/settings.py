"""A run's settings as one typed object: what `fit` resolved from the preset and its flags, and what config.json
records under "settings" (the same keys, in the same order as before). Runs written by earlier versions lack some
keys; `migrate` gives them the values those versions trained with, in one place, when config.json is read. `check`
says which key holds a value of the wrong type or range, so that a hand-edited config.json fails where it is read."""
import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import NamedTuple

from transformer.registry import MODELS

from .checkpoint import CHECKPOINTS
from ..cli.arguments import PRECISIONS
from .presets import DECODING, PRESETS

# keys that older config.json files lack, and the value those runs trained (or decoded) with
OLDER_RUNS = {"extra_source": None, "held_back": 0, "weight_decay": 0.0, "bpe_dropout": 0.0, "rdrop": 0.0,
              "decoding": DECODING, "precision": "fp32"}
# keys written only where they apply: Transformer dropouts (an LSTM has none), the corpus folder (once it is known)
ABSENT_WHEN_NONE = ("attention_dropout", "activation_dropout", "data_dir")


@dataclass(frozen=True)
class Settings:
    """Everything a run trained with, apart from the model's sizes (config.json's model_config)."""
    # the data: corpus, languages, vocabulary, segmentation
    corpus: str = "multi30k"
    src: str = "de"
    tgt: str = "en"
    vocab_size: int = 8000
    # the schedule and the update
    batch_tokens: int = 4096
    epochs: int = 10
    lr: float = 1e-3
    warmup: int = 4000
    label_smoothing: float = 0.1
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    # checkpoints and records
    avg_last: int = 5
    val_bleu_sentences: int = 0
    save_every: int = 0
    log_every: int = 10
    # the regularisers and the extra data
    bpe_dropout: float = 0.0
    rdrop: float = 0.0
    extra_source: str | None = None
    held_back: int = 0
    # the training step's precision: fp32, or fp16 (mixed, with loss scaling)
    precision: str = "fp32"
    # decoding: evaluate's and translate's defaults
    decoding: dict = field(default_factory=lambda: dict(DECODING))
    # the preset it started from, the model kind and its dropouts
    preset: str | None = None
    model: str = "transformer"
    seed: int = 0
    max_steps: int | None = None   # a step budget belongs to one command, not to the run
    dropout: float = 0.1
    attention_dropout: float | None = None
    activation_dropout: float | None = None
    data_dir: str | None = None    # the corpus folder, set once the corpus is found

    @classmethod
    def from_dict(cls, d, where="settings."):
        """The settings that config.json records (older runs migrated, each value checked: ValueError from check,
        naming `where` and the key); keys of no field are left out."""
        names = {f.name for f in fields(cls)}
        d = migrate(d)
        check(d, where)
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self):
        """config.json's "settings"."""
        return {k: v for k, v in asdict(self).items() if not (k in ABSENT_WHEN_NONE and v is None)}

    def with_changes(self, **changes):
        """A copy with some settings changed (a resumed run's --epochs, the corpus folder once found)."""
        return replace(self, **changes)


def migrate(d):
    """config.json's settings of any version as this version writes them: the keys earlier versions did not write
    get the value those runs used."""
    return {**{k: v for k, v in OLDER_RUNS.items() if k not in d}, **d}


class Check(NamedTuple):
    """What a setting must hold: test(value) -> bool, and the words for it in a message."""
    test: object
    expected: str


def _number(test, expected):
    # JSON's true and false are no numbers, and NaN or Infinity (which Python's json reads) no setting
    return Check(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                 and (isinstance(v, int) or math.isfinite(v)) and test(v), expected)


def _integer(low):
    return Check(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low, f"an integer >= {low}")


def _one_of(choices):
    return Check(lambda v: isinstance(v, str) and v in choices, f"one of {', '.join(choices)}")


def _optional(c):
    return Check(lambda v: v is None or c.test(v), f"{c.expected}, or null")


_NAME = Check(lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")
_POSITIVE, _NON_NEGATIVE = _number(lambda v: v > 0, "a positive number"), _number(lambda v: v >= 0, "a number >= 0")
_RATE = _number(lambda v: 0 <= v < 1, "a number in [0, 1)")
# each setting's check: the ranges of fit's flags of the same name
CHECKS = {"corpus": _one_of(sorted({p.corpus for p in PRESETS.values()})), "src": _NAME, "tgt": _NAME,
          "vocab_size": _integer(1), "batch_tokens": _integer(1), "epochs": _integer(1), "lr": _POSITIVE,
          "warmup": _integer(1), "label_smoothing": _RATE, "weight_decay": _NON_NEGATIVE, "clip_norm": _POSITIVE,
          "avg_last": _integer(1), "val_bleu_sentences": _integer(0), "save_every": _integer(0),
          "log_every": _integer(1), "bpe_dropout": _RATE, "rdrop": _NON_NEGATIVE, "extra_source": _optional(_NAME),
          "held_back": _integer(0), "precision": _one_of(PRECISIONS), "preset": _optional(_NAME),
          "model": _one_of(MODELS), "seed": _integer(0),
          "max_steps": _optional(_integer(1)), "dropout": _RATE, "attention_dropout": _optional(_RATE),
          "activation_dropout": _optional(_RATE), "data_dir": _optional(_NAME)}
DECODING_CHECKS = {"checkpoint": _one_of(CHECKPOINTS), "beam": _integer(1), "length_penalty": _NON_NEGATIVE}


def check(d, where="settings."):
    """ValueError naming the first key of settings `d` (migrated) that is missing or holds a value of the wrong
    type or range: where (the file and "settings.") and the key, the value and what was expected."""
    for key, c in CHECKS.items():
        if key not in d and key not in ABSENT_WHEN_NONE:
            raise ValueError(f"{where}{key} is missing (expected {c.expected})")
        if key in d and not c.test(d[key]):
            raise ValueError(f"{where}{key} holds {shown(d[key])}; expected {c.expected}")
    some = f"some of {', '.join(DECODING_CHECKS)}"
    if not isinstance(d["decoding"], dict):
        raise ValueError(f"{where}decoding holds {shown(d['decoding'])}; expected an object with {some}")
    for key, value in d["decoding"].items():
        c = DECODING_CHECKS.get(key)
        if c is None:
            raise ValueError(f"{where}decoding has the key {shown(key)}; expected {some}")
        if not c.test(value):
            raise ValueError(f"{where}decoding.{key} holds {shown(value)}; expected {c.expected}")


def shown(value, width=60):
    """A value as config.json writes it (a string in quotes, null, true), cut to `width` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."
