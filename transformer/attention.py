"""Multi-head attention (Vaswani et al. 2017, section 3.2.2), with a key/value cache for incremental decoding."""
import numpy as np

import minitorch as mt
import minitorch.functional as F
from minitorch import nn

from .init import xavier_linear_


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,  head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i).

    The h heads work in parallel on d_k = d_model / h dims each. Self-attention projects Q, K and V with one
    (3 d_model, d_model) matrix; cross-attention takes Q from the decoder and projects K and V from the encoder
    output (the "memory") with one (2 d_model, d_model) matrix, once per source sentence. dropout: on the attention
    weights while training (attention dropout).
    """

    def __init__(self, d_model, n_heads, cross=False, dropout=0.0):
        super().__init__()
        self.n_heads, self.cross = n_heads, cross
        self.dropout = dropout
        if cross:
            self.w_q = xavier_linear_(nn.Linear(d_model, d_model))
            self.w_kv = xavier_linear_(nn.Linear(d_model, 2 * d_model), n_blocks=2)
        else:
            self.w_qkv = xavier_linear_(nn.Linear(d_model, 3 * d_model), n_blocks=3)
        self.w_o = xavier_linear_(nn.Linear(d_model, d_model))

    def memory_kv(self, memory, packed=False):
        """memory (B, S, d_model) -> keys, values (B, n_heads, S, d_k) for cross-attention; packed=True: the two
        stacked, (2, B, n_heads, S, d_k), which forward takes with one gradient array (F.cross_attention)."""
        kv = F.split_heads(self.w_kv(memory), self.n_heads, 2)
        return kv if packed else (kv[0], kv[1])

    def forward(self, x, mask=None, kv=None, cache=None, weights=None):
        """x (B, T, d_model) -> (B, T, d_model).

        mask: bool array broadcastable to (B, n_heads, T, T_keys), True = may attend.
        kv: cross-attention only: (keys, values) from memory_kv, or both packed (memory_kv(memory, packed=True)).
        cache: self-attention only: a dict with the keys and values of the earlier positions (incremental
            decoding); this call's keys and values are appended to them, and the dict is updated.
        weights: a list; when given, the attention weights (B, n_heads, T, T_keys) are appended to it (plots).
        """
        if self.cross:
            q = F.split_heads(self.w_q(x), self.n_heads)
            if isinstance(kv, mt.Tensor):   # packed: one gradient array for keys and values (F.cross_attention)
                out = F.cross_attention(q, kv, mask, self.dropout, self.training)
                k = kv[0] if weights is not None else None
            else:
                k, v = kv
                out = F.scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training)
        elif cache is None:   # one gradient array for q, k and v (F.self_attention)
            qkv = F.split_heads(self.w_qkv(x), self.n_heads, 3)
            out = F.self_attention(qkv, mask, self.dropout, self.training)
            q, k = (qkv[0], qkv[1]) if weights is not None else (None, None)
        else:
            q, k, v = F.split_heads(self.w_qkv(x), self.n_heads, 3)
            if "k" in cache:
                k, v = mt.cat([cache["k"], k], dim=2), mt.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
            out = F.scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training)  # (B, n_heads, T, d_k)
        if weights is not None:  # the weights are what attention does to identity values: w @ I = w
            eye = mt.tensor(np.eye(k.shape[2]), dtype=q.dtype, device=q.device)
            weights.append(F.scaled_dot_product_attention(q, k, eye, mask))
        return self.w_o(F.merge_heads(out))  # Concat(head_1, ..., head_h) W_O
