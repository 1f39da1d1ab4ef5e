"""The parts of a Transformer layer (Vaswani et al. 2017, section 3): embeddings and positions, the position-wise
feed-forward network, residual sub-layer connections, and the encoder and decoder layers built from them."""
import functools
import math

import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

from .attention import MultiHeadAttention
from .init import embedding_normal_, xavier_linear_


class Embeddings(nn.Embedding):
    """Token ids (B, T) -> vectors (B, T, d_model) multiplied by sqrt(d_model) (section 3.4)."""

    def __init__(self, vocab_size, d_model, padding_idx=None):
        super().__init__(vocab_size, d_model, padding_idx=padding_idx)
        embedding_normal_(self.weight, d_model, padding_idx)
        self.scale = math.sqrt(d_model)

    def forward(self, ids):
        return super().forward(ids) * self.scale


@functools.lru_cache(maxsize=8)
def sinusoidal_table(max_len, d_model):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)) (section 3.5).

    A read-only float64 NumPy array (max_len, d_model).
    """
    angle = np.arange(max_len)[:, None] * np.exp(-math.log(10000.0) * np.arange(0, d_model, 2) / d_model)
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)[:, : d_model // 2]
    table.flags.writeable = False
    return table


class PositionalEncoding(nn.Module):
    """x + position vectors, then dropout. Sinusoids (section 3.5) or, with learned=True, a trained table."""

    def __init__(self, d_model, max_len, dropout, learned=False):
        super().__init__()
        self.d_model, self.max_len, self.dropout = d_model, max_len, dropout
        self.table = None
        if learned:
            self.table = nn.Parameter(mt.zeros(max_len, d_model))
            embedding_normal_(self.table, d_model)
        self._sinusoids = {}  # (device, dtype) -> Tensor: fixed, so not part of the state dict

    def forward(self, x, positions=0):
        """x (B, T, d_model); positions: the first position (int, then T in a row) or each one, (B, T) int array
        (a host array: the max_len check reads it, which on a GPU array would make the host wait)."""
        T = x.shape[1]
        last = positions + T - 1 if isinstance(positions, int) else (int(positions.max()) if positions.size else 0)
        if last >= self.max_len:
            raise ValueError(f"position {last} is past the model's max_len ({self.max_len}): sequences may have at "
                             f"most {self.max_len} tokens (ModelConfig.max_len)")
        table = self.table if self.table is not None else self.sinusoids(x)
        pe = table[positions:positions + T] if isinstance(positions, int) else F.embedding(positions, table)
        return F.dropout(x + pe, self.dropout, self.training)

    def sinusoids(self, x):
        key = (x.device, x.dtype)
        if key not in self._sinusoids:
            self._sinusoids[key] = mt.tensor(sinusoidal_table(self.max_len, self.d_model), dtype=x.dtype,
                                             device=x.device)
        return self._sinusoids[key]


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (section 3.3): d_model -> d_ff -> d_model at each position.

    dropout (activation dropout): on the d_ff hidden units while training, as fairseq's small-data recipes do."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w_1 = xavier_linear_(nn.Linear(d_model, d_ff))
        self.w_2 = xavier_linear_(nn.Linear(d_ff, d_model))
        self.dropout = dropout

    def forward(self, x):  # w_1's bias and the ReLU in one op (one GPU kernel): F.bias_relu
        hidden = F.bias_relu(F.linear(x, self.w_1.weight), self.w_1.bias)
        return self.w_2(F.dropout(hidden, self.dropout, self.training))


class Residual(nn.Module):
    """A residual connection around a sub-layer, with dropout on the sub-layer's output (section 5.4) and LayerNorm.

    pre-LN:  x + dropout(sublayer(norm(x)))       (Xiong et al. 2020: trains without a long warm-up)
    post-LN: norm(x + dropout(sublayer(x)))       (the 2017 original)
    """

    def __init__(self, d_model, dropout, norm="pre"):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout, self.pre = dropout, norm == "pre"

    def forward(self, x, sublayer):  # F.dropout_add: x + F.dropout(y) as one op (one kernel on a GPU)
        if self.pre:
            return F.dropout_add(x, sublayer(self.norm(x)), self.dropout, self.training)
        return self.norm(F.dropout_add(x, sublayer(x), self.dropout, self.training))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network, each inside a Residual."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, dropout=cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_dropout)
        self.sublayer = nn.ModuleList([Residual(cfg.d_model, cfg.dropout, cfg.norm) for _ in range(2)])

    def forward(self, x, mask):
        """x (B, S, d_model), mask (B, 1, 1, S) -> (B, S, d_model)."""
        x = self.sublayer[0](x, lambda y: self.self_attn(y, mask))
        return self.sublayer[1](x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output (left out with cross=False, as in GPT), then
    the feed-forward network, each inside a Residual."""

    def __init__(self, cfg, cross=True):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, dropout=cfg.attention_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cross=True,
                                             dropout=cfg.attention_dropout) if cross else None
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_dropout)
        self.sublayer = nn.ModuleList([Residual(cfg.d_model, cfg.dropout, cfg.norm) for _ in range(2 + cross)])

    def forward(self, x, tgt_mask, memory_kv=None, src_mask=None, cache=None, weights=None):
        """x (B, T, d_model) -> (B, T, d_model).

        tgt_mask: broadcastable to (B, 1, T, T_keys); memory_kv: this layer's cross-attention (keys, values);
        src_mask (B, 1, 1, S); cache: the self-attention's key/value cache; weights: collects cross-attention weights.
        """
        x = self.sublayer[0](x, lambda y: self.self_attn(y, tgt_mask, cache=cache))
        if self.cross_attn is not None:
            x = self.sublayer[1](x, lambda y: self.cross_attn(y, src_mask, kv=memory_kv, weights=weights))
        return self.sublayer[-1](x, self.ffn)
