"""Mixed precision, as torch.amp: `autocast` runs a block's matrix products in float16 with float32 sums where they
matter, and `GradScaler` scales the loss so that float16 gradients neither underflow nor go unnoticed when they
overflow. The parameters and the optimizer stay float32."""
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]
