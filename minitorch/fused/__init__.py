"""The fused ops' reference code: one Function each, with the backward derived by hand in its docstring.

Their faster versions for each device are in minitorch/kernels/. `composed.py` holds the same ops built from
primitive ops (autograd derives their backward), which tests and `python -m minitorch.tools.bench_ops` compare these
against. docs/backprop.md walks through the derivations.
"""
from .attention import cross_attention, scaled_dot_product_attention, self_attention
from .cross_entropy import cross_entropy
from .layer_norm import layer_norm
from .lstm_cell import lstm_cell
from .softmax import log_softmax, softmax

__all__ = ["softmax", "log_softmax", "cross_entropy", "layer_norm", "scaled_dot_product_attention", "self_attention",
           "cross_attention", "lstm_cell"]
