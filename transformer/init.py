"""How the weights start, as in fairseq's Transformer (a widely used reference implementation).

Projection matrices: Xavier uniform (Glorot & Bengio 2010), U(-a, a) with a = sqrt(6 / (fan_in + fan_out)), drawn one
d_model-wide block at a time for the fused Q/K/V and K/V projections, so they start exactly like separate ones.
Biases: zero. Token and learned position embeddings: N(0, d_model^-1/2), so that embedding * sqrt(d_model) has unit
variance like the sinusoids, and tied output logits start small.
"""
from minitorch import nn


def xavier_linear_(linear, n_blocks=1):
    """Xavier-uniform weight (in n_blocks equal row blocks) and zero bias for an nn.Linear, in place."""
    nn.init.xavier_uniform_(linear.weight, n_blocks=n_blocks)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
    return linear


def embedding_normal_(weight, d_model, padding_idx=None):
    """N(0, 1/d_model) entries, the padding row zero, in place."""
    nn.init.normal_(weight, 0.0, d_model ** -0.5)
    if padding_idx is not None:
        weight.data[padding_idx] = 0
    return weight
