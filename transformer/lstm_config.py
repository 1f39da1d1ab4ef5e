"""LSTMConfig: the sizes that define the LSTM baselines (LSTMSeq2Seq, LSTMAttnSeq2Seq)."""
from dataclasses import dataclass

from .config import StoredConfig


@dataclass
class LSTMConfig(StoredConfig):
    """Hyperparameters of the LSTM encoder-decoders.

    d_embed: token embedding size; d_hidden: the decoder's LSTM state size, also the encoder's (the attention model's
    bidirectional encoder gives each direction d_hidden / 2, so d_hidden must be even there).
    n_layers: LSTM layers in the encoder and in the decoder. dropout: on embeddings, between LSTM layers and before
    the output layer. max_len: the most tokens a source or target sentence may have (the training pipeline filters
    and clips by it; nothing in the model's size depends on it). tie_embeddings: one token embedding shared by
    source, target and the output projection (a joint vocabulary).
    """
    vocab_size: int
    d_embed: int = 256
    d_hidden: int = 512
    n_layers: int = 2
    dropout: float = 0.2
    max_len: int = 512
    tie_embeddings: bool = True
    pad_id: int = 0

    def validate(self):
        """Raise ValueError naming the field when the sizes cannot make a model; returns self."""
        minimum = {"vocab_size": 1, "d_embed": 1, "d_hidden": 1, "n_layers": 1, "max_len": 1, "pad_id": 0}
        for name, low in minimum.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"LSTMConfig.{name} must be an integer >= {low}, got {value!r}")
        if self.pad_id >= self.vocab_size:
            raise ValueError(f"LSTMConfig.pad_id ({self.pad_id}) must be < vocab_size ({self.vocab_size})")
        p = self.dropout
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
            raise ValueError(f"LSTMConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not isinstance(self.tie_embeddings, bool):
            raise ValueError(f"LSTMConfig.tie_embeddings must be True or False, got {self.tie_embeddings!r}")
        return self
