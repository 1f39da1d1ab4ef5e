"""ModelConfig: the sizes and choices that define a Transformer."""
import dataclasses
from dataclasses import dataclass

NORMS = ("pre", "post")
POSITIONS = ("sinusoidal", "learned")


class Mismatch(ValueError):
    """Two fields whose values do not fit together: the message, and for a caller that names where each value came
    from (a flag, a preset) the two fields, how they fail (relation) and why it matters (reason)."""

    def __init__(self, message, fields, relation, reason):
        super().__init__(message)
        self.fields, self.relation, self.reason = fields, relation, reason


class StoredConfig:
    """to_dict / from_dict for a config dataclass, so that a run folder can store it as JSON and rebuild it."""

    def to_dict(self):
        """A plain dict (JSON-ready) of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        """The config stored by to_dict; unknown or missing keys raise ValueError."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"{cls.__name__}.from_dict: unknown keys {unknown}; expected some of {sorted(names)}")
        if "vocab_size" not in d:
            raise ValueError(f"{cls.__name__}.from_dict: the key 'vocab_size' is missing")
        return cls(**d).validate()


@dataclass
class ModelConfig(StoredConfig):
    """Hyperparameters of the model, named as in the paper (defaults: the sizes of the base model of Vaswani et al.
    2017, but pre-LN, where the paper normalises after each residual addition).

    norm: "pre" puts LayerNorm before each sub-layer plus a final LayerNorm (stable without long warm-up);
    "post" normalises after each residual addition, as in the 2017 original.
    tie_embeddings: one token embedding shared by source, target and the output projection (a joint vocabulary).
    dropout: on embeddings plus positions and on each sub-layer's output; attention_dropout: on the attention
    weights; activation_dropout: on the feed-forward network's hidden ReLU units (fairseq's names).
    """
    vocab_size: int
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    max_len: int = 512
    norm: str = "pre"
    positions: str = "sinusoidal"
    tie_embeddings: bool = True
    pad_id: int = 0

    @property
    def d_k(self):
        """Dimension of one attention head."""
        return self.d_model // self.n_heads

    def validate(self):
        """Raise ValueError naming the field when the sizes cannot make a model; returns self."""
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        minimum = {"vocab_size": 1, "d_model": 1, "n_heads": 1, "d_ff": 1, "n_encoder_layers": 0,
                   "n_decoder_layers": 1, "max_len": 1, "pad_id": 0}
        for name, low in minimum.items():
            value = getattr(self, name)
            if not is_int(value) or value < low:
                raise ValueError(f"ModelConfig.{name} must be an integer >= {low}, got {value!r}")
        if self.d_model % self.n_heads:
            raise Mismatch(f"ModelConfig: d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})",
                           ("d_model", "n_heads"), "is not divisible by",
                           "each head takes d_model / n_heads dimensions")
        if self.pad_id >= self.vocab_size:
            raise ValueError(f"ModelConfig.pad_id ({self.pad_id}) must be < vocab_size ({self.vocab_size})")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"ModelConfig.{name} must be in [0, 1), got {value!r}")
        if self.norm not in NORMS:
            raise ValueError(f"ModelConfig.norm must be one of {NORMS}, got {self.norm!r}")
        if self.positions not in POSITIONS:
            raise ValueError(f"ModelConfig.positions must be one of {POSITIONS}, got {self.positions!r}")
        if not isinstance(self.tie_embeddings, bool):
            raise ValueError(f"ModelConfig.tie_embeddings must be True or False, got {self.tie_embeddings!r}")
        return self
