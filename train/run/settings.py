"""A run's settings as one typed object: what `fit` resolved from the preset and its flags, and what config.json
records under "settings" (the same keys, in the same order as before). Runs written by earlier versions lack some
keys; `migrate` gives them the values those versions trained with, in one place, when config.json is read."""
from dataclasses import asdict, dataclass, field, fields, replace

from .presets import DECODING

# keys that older config.json files lack, and the value those runs trained (or decoded) with
OLDER_RUNS = {"extra_source": None, "held_back": 0, "weight_decay": 0.0, "bpe_dropout": 0.0, "rdrop": 0.0,
              "decoding": DECODING}
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
    def from_dict(cls, d):
        """The settings that config.json records (older runs migrated); keys of no field are left out."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in migrate(d).items() if k in names})

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
