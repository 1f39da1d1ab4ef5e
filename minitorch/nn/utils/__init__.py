"""nn.utils, as in PyTorch: gradient clipping; and flat parameter storage."""
from .clip_grad import clip_grad_norm_
from .flat import flatten_parameters

__all__ = ["clip_grad_norm_", "flatten_parameters"]
