"""The model kinds and how each is built from its configuration: the names a run folder stores ("transformer",
"lstm", "lstm-attn"), their configuration and model classes, and a model from sizes or from a stored configuration."""
from .config import ModelConfig
from .lstm_config import LSTMConfig
from .lstm_models import LSTMAttnSeq2Seq, LSTMSeq2Seq
from .model import Transformer
from .vocabulary import BOS_ID, EOS_ID, MAX_LEN_A, MAX_LEN_B, PAD_ID, UNK_ID  # noqa: F401 (train/ reads them here)

MODELS = ("transformer", "lstm", "lstm-attn")
CLASSES = {"transformer": (ModelConfig, Transformer), "lstm": (LSTMConfig, LSTMSeq2Seq),
           "lstm-attn": (LSTMConfig, LSTMAttnSeq2Seq)}


def model_classes(kind):
    """(configuration class, model class) of a model kind, one of MODELS; ValueError for another name."""
    if kind not in CLASSES:
        raise ValueError(f"unknown model {kind!r}; this version has {', '.join(MODELS)}")
    return CLASSES[kind]


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
