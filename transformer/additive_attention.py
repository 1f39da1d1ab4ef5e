"""Additive attention (Bahdanau et al. 2015, eq. 6): score(s, h_j) = v^T tanh(W_s s + W_h h_j)."""
import math

import minitorch as mt
import minitorch.functional as F
from minitorch import nn


class AdditiveAttention(nn.Module):
    """A query s (B, d_query) attends over memory h (B, S, d_memory): weights = softmax_j score(s, h_j) over the real
    (unpadded) positions j, context = sum_j weights_j h_j.

    W_h h_j does not depend on the query, so it is computed once per batch (`keys`) and reused at every decoder step.
    No biases, as in the paper. v starts from U(-1/sqrt(d_attn), 1/sqrt(d_attn)).
    """

    def __init__(self, d_query, d_memory, d_attn):
        super().__init__()
        self.query_proj = nn.Linear(d_query, d_attn, bias=False)    # W_s
        self.memory_proj = nn.Linear(d_memory, d_attn, bias=False)  # W_h
        bound = 1.0 / math.sqrt(d_attn)
        self.v = nn.Parameter(nn.init.uniform_(mt.zeros(d_attn), -bound, bound))

    def keys(self, memory):
        """memory (B, S, d_memory) -> W_h h_j, (B, S, d_attn)."""
        return self.memory_proj(memory)

    def forward(self, query, keys, memory, keep):
        """query (B, d_query), keys (B, S, d_attn) from `keys`, memory (B, S, d_memory), keep: bool Tensor (B, S),
        True at real positions -> context (B, d_memory), weights (B, S) (0 at padding; all 0 for an empty source)."""
        scores = (keys + self.query_proj(query).unsqueeze(1)).tanh() @ self.v            # (B, S)
        weights = F.softmax(scores.masked_fill(~keep, -math.inf), dim=-1)
        return (weights.unsqueeze(1) @ memory).squeeze(1), weights
