"""torch.cuda's first questions: is_available() and device_count(), for the tutorials' `device = "cuda" if
torch.cuda.is_available() else "cpu"`; manual_seed seeds every device's generator (minitorch seeds them together)."""
from . import backend


def is_available():
    """Whether device="cuda" works here (CuPy and a GPU)."""
    return backend.cuda_available()


def device_count():
    """1 where a GPU is usable (minitorch uses one), else 0."""
    return 1 if backend.cuda_available() else 0


def manual_seed(seed):
    """Seed the generators (all devices': minitorch has one seed for all, as mt.manual_seed)."""
    backend.manual_seed(seed)


manual_seed_all = manual_seed
