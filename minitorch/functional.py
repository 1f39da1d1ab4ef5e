"""minitorch.functional (imported as F): activations, dropout, linear, embedding, and the fused ops.

The fused ops (softmax, log_softmax, cross_entropy, layer_norm, scaled_dot_product_attention, self_attention,
lstm_cell) live in `minitorch/fused/`, each one Function with a hand-written backward; this module re-exports them.
"""
import numpy as np

from . import backend
from .ops import BiasRelu, Dropout, DropoutAdd, Embedding
from .tensor import Tensor


def relu(x):
    """max(x, 0), any shape."""
    return x.relu()


def bias_relu(x, bias):
    """max(x + bias, 0), bias broadcast against x (..., n) (a Linear's bias, added here): one op, one GPU kernel."""
    return BiasRelu.apply(x, bias)


def gelu(x):
    """GELU (tanh approximation), any shape."""
    return x.gelu()


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not training or p == 0."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    if not training or p == 0.0:
        return x
    return Dropout.apply(x, p=p)


def dropout_add(x, y, p=0.5, training=True):
    """x + dropout(y, p, training) for x, y of one shape and dtype (a residual connection): one op, one GPU kernel."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout_add: p must be in [0, 1), got {p}")
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"dropout_add: x and y must have one shape and dtype, got {x.shape} {x.dtype} and "
                         f"{y.shape} {y.dtype}")
    if not training or p == 0.0:
        return x + y
    return DropoutAdd.apply(x, y, p=p)


def linear(x, weight, bias=None):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out)."""
    if x.shape[-1] != weight.shape[-1]:
        raise ValueError(f"linear: input of shape {x.shape} has {x.shape[-1]} features but the weight of shape "
                         f"{weight.shape} expects {weight.shape[-1]}")
    y = x @ weight.T
    return y if bias is None else y + bias


def embedding(ids, weight, padding_idx=None):
    """ids (...) int, weight (n, d) -> (..., d). Host ids are range-checked before they move to weight's device."""
    ids_data = ids.data if isinstance(ids, Tensor) else ids
    if not backend.is_array(ids_data):
        ids_data = np.asarray(ids_data)
    if ids_data.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids_data.dtype}")
    bad = backend.out_of_range(ids_data, weight.shape[0])
    if bad:
        raise IndexError(f"embedding: ids must lie in [0, {weight.shape[0]}), got values from {bad[0]} to {bad[1]}")
    return Embedding.apply(backend.to_device(ids_data, weight.device), weight, padding_idx=padding_idx)


from .fused import (cross_entropy, layer_norm, log_softmax, lstm_cell,  # noqa: E402
                    scaled_dot_product_attention, self_attention, softmax)

__all__ = ["relu", "bias_relu", "gelu", "dropout", "dropout_add", "linear", "embedding", "softmax", "log_softmax",
           "cross_entropy", "layer_norm", "scaled_dot_product_attention", "self_attention", "lstm_cell"]
