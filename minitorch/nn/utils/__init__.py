"""nn.utils, as in PyTorch: gradient clipping; and flat parameter storage (FlatParameters)."""
from .clip_grad import clip_grad_norm_
from .flat import FlatParameters

__all__ = ["clip_grad_norm_", "FlatParameters"]
