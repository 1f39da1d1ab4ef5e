"""Transformer models built only from minitorch: the encoder-decoder Transformer, the LSTM baselines it is compared
with, and greedy / beam-search decoding with a key/value cache."""
from . import decoding
from .config import ModelConfig
from .decoding import Ensemble, beam_search, greedy_decode
from .lstm_config import LSTMConfig
from .lstm_models import LSTMAttnSeq2Seq, LSTMSeq2Seq
from .model import Transformer

__all__ = ["ModelConfig", "Transformer", "decoding", "greedy_decode", "beam_search", "Ensemble",
           "LSTMConfig", "LSTMSeq2Seq", "LSTMAttnSeq2Seq"]
