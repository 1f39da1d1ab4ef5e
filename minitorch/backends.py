"""torch.backends' questions that tutorials ask before choosing a device: minitorch has no Apple GPU (MPS) backend,
and CUDA goes through CuPy (cudnn is not used)."""
from types import SimpleNamespace

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cudnn = SimpleNamespace(is_available=lambda: False, enabled=False, deterministic=True, benchmark=False)
