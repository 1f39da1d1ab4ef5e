"""The model kinds and how each is built from its configuration: the names a run folder stores ("transformer",
"lstm", "lstm-attn"), their configuration and model classes, and a model from sizes or from a stored configuration."""
from dataclasses import dataclass, fields

from .config import ModelConfig
from .lstm_config import LSTMConfig
from .lstm_models import LSTMAttnSeq2Seq, LSTMSeq2Seq
from .model import Transformer
from .vocabulary import BOS_ID, EOS_ID, MAX_LEN_A, MAX_LEN_B, PAD_ID, UNK_ID  # noqa: F401 (train/ reads them here)


@dataclass(frozen=True)
class Kind:
    """A model kind: its configuration and model classes, and what a training setup needs to know of it.

    name: what a run folder stores; title: its name in messages; preset_field: the field of a training preset that
    holds this kind's sizes; size_flags: a size flag (d_model, layers, ...) -> the configuration fields it sets."""
    name: str
    title: str
    config: type
    model: type
    preset_field: str
    size_flags: dict
    # the bench's yardsticks exist for it: its matmul FLOP formula, the host-cost timing and PyTorch's twin
    # (scripts/torch_reference.py)
    benchmarked: bool = False

    def has_field(self, name):
        """Whether this kind's configuration has a field of that name (a dropout that the others lack)."""
        return name in {f.name for f in fields(self.config)}

    def field_default(self, name):
        return next(f.default for f in fields(self.config) if f.name == name)


_LSTM_SIZES = {"layers": ("n_layers",), "max_len": ("max_len",)}
KINDS = {k.name: k for k in (
    Kind("transformer", "Transformer", ModelConfig, Transformer, "model",
         {"d_model": ("d_model",), "n_heads": ("n_heads",), "d_ff": ("d_ff",),
          "layers": ("n_encoder_layers", "n_decoder_layers"), "max_len": ("max_len",)}, benchmarked=True),
    Kind("lstm", "LSTM", LSTMConfig, LSTMSeq2Seq, "lstm", _LSTM_SIZES),
    Kind("lstm-attn", "LSTM", LSTMConfig, LSTMAttnSeq2Seq, "lstm", _LSTM_SIZES),
)}
MODELS = tuple(KINDS)
DEFAULT_MODEL = MODELS[0]   # the Transformer: what a run trains unless --model says otherwise
SIZE_FLAGS = tuple(dict.fromkeys(flag for k in KINDS.values() for flag in k.size_flags))   # every kind's


def kind_of(name):
    """The Kind of a model kind's name, one of MODELS; ValueError for another name."""
    if name not in KINDS:
        raise ValueError(f"unknown model {name!r}; this version has {', '.join(MODELS)}")
    return KINDS[name]


def model_classes(kind):
    """(configuration class, model class) of a model kind, one of MODELS; ValueError for another name."""
    k = kind_of(kind)
    return k.config, k.model


def model_config(kind, vocab_size, sizes):
    """The validated configuration (ModelConfig or LSTMConfig) of a model kind from the sizes (all fields but
    vocab_size); ValueError saying what is wrong."""
    config_class, _ = model_classes(kind)
    try:
        return config_class(vocab_size=vocab_size, **sizes).validate()
    except TypeError as e:   # a field this kind does not have
        raise ValueError(str(e)) from None


def new_model(kind, vocab_size, sizes):
    """A freshly initialised model of a kind with the given sizes (e.g. a preset's)."""
    return model_classes(kind)[1](model_config(kind, vocab_size, sizes))


def build_model(kind, fields):
    """A freshly initialised model of a kind from its stored configuration (the dict of to_dict); ValueError when
    the fields make no configuration of that kind."""
    config_class, model_class = model_classes(kind)
    try:
        return model_class(config_class.from_dict(fields))
    except TypeError as e:
        raise ValueError(str(e)) from None
