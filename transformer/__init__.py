"""Transformer models built only from minitorch: the encoder-decoder Transformer, a decoder-only (GPT-style)
variant, and greedy / beam-search decoding with a key/value cache."""
from . import decoding
from .config import ModelConfig
from .decoder_only import DecoderOnly
from .decoding import beam_search, greedy_decode
from .model import Transformer

__all__ = ["ModelConfig", "Transformer", "DecoderOnly", "decoding", "greedy_decode", "beam_search"]
