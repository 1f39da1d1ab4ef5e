"""minitorch.utils, as torch.utils: checkpoint (activation checkpointing), data (Dataset, DataLoader)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
