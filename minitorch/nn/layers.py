"""The basic layers: Linear, Embedding, LayerNorm, Dropout (Dropout1d, Dropout2d: whole channels), and the
activations ReLU, GELU, Tanh, Sigmoid."""
import math

from .. import functional as F
from ..factories import zeros
from . import init
from .module import Module, Parameter


class Linear(Module):
    """y = x W^T + b, x (..., in_features) -> (..., out_features).

    Initialised as PyTorch does: W and b from U(-1/sqrt(in_features), 1/sqrt(in_features)).
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        shape = (out_features, in_features)
        self.weight = Parameter(init.uniform_(zeros(shape, dtype=dtype, device=device), -bound, bound))
        self.bias = Parameter(init.uniform_(zeros((out_features,), dtype=dtype, device=device), -bound, bound)) \
            if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """ids (...) int -> vectors (..., embedding_dim). Initialised N(0, 1); the padding_idx row is zero, untrained."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = Parameter(init.normal_(zeros((num_embeddings, embedding_dim), dtype=dtype, device=device)))
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, padding_idx={self.padding_idx}"


class LayerNorm(Module):
    """Normalise over the last dim(s) to mean 0, variance 1, then scale by weight (ones) and shift by bias (zeros)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(init.ones_(zeros(self.normalized_shape, dtype=dtype, device=device)))
            self.bias = Parameter(init.zeros_(zeros(self.normalized_shape, dtype=dtype, device=device)))
        else:
            self.weight = self.bias = None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """Zero elements with probability p while training (scaling the rest by 1/(1-p)); identity in eval mode."""

    def __init__(self, p=0.1):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class Dropout1d(Module):
    """Zero whole channels of (N, C, L) (or (C, L)) with probability p while training, scaling the others by
    1/(1-p); identity in eval mode."""

    function = staticmethod(F.dropout1d)

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return self.function(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout1d):
    """Zero whole channels of (N, C, H, W) with probability p while training, scaling the others by 1/(1-p);
    identity in eval mode."""

    function = staticmethod(F.dropout2d)


class ReLU(Module):
    """max(x, 0) as a module, for Sequential."""

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """GELU as a module, for Sequential: approximate="tanh" (the default here) or "none" (PyTorch's default, erf)."""

    def __init__(self, approximate="tanh"):
        super().__init__()
        if approximate not in ("tanh", "none"):
            raise ValueError(f"GELU: approximate must be 'tanh' or 'none', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x) as a module, for Sequential."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) as a module, for Sequential."""

    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    """softmax over dim, as a module."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, x):
        return F.softmax(x, dim=self.dim)


class LogSoftmax(Module):
    """log_softmax over dim, as a module (before NLLLoss)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, x):
        return F.log_softmax(x, dim=self.dim)
