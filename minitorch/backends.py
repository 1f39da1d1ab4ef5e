"""torch.backends' questions that tutorials ask before choosing a device: minitorch has no Apple GPU (MPS) backend,
and CUDA goes through CuPy (cudnn is not used); and PyTorch's TF32 switch, `mt.backends.cuda.matmul.allow_tf32 =
True`, which lets cuBLAS compute float32 products in TF32 (backend.set_tf32)."""
from types import SimpleNamespace

from . import backend

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cudnn = SimpleNamespace(is_available=lambda: False, enabled=False, deterministic=True, benchmark=False)


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 reads and sets CuPy's compute type for float32 products."""

    @property
    def allow_tf32(self):
        return backend.tf32_enabled()

    @allow_tf32.setter
    def allow_tf32(self, value):
        backend.set_tf32(bool(value))


cuda = SimpleNamespace(matmul=_Matmul())
