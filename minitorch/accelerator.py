"""torch.accelerator, as the tutorials open with it: `device = torch.accelerator.current_accelerator().type if
torch.accelerator.is_available() else "cpu"`. minitorch's one accelerator is CUDA (through CuPy)."""
from . import backend
from .dtypes import device


def is_available():
    """Whether an accelerator (here: a CUDA GPU with CuPy) can be used."""
    return backend.cuda_available()


def current_accelerator(check_available=False):
    """device("cuda") where CuPy is installed (PyTorch's: the accelerator it was built for), else None;
    check_available=True: only where a GPU can be used too."""
    usable = backend.cuda_available() if check_available else backend.xp_of_device("cuda") is not None
    return device("cuda") if usable else None


def device_count():
    """1 where a GPU is usable (minitorch uses one), else 0."""
    return 1 if backend.cuda_available() else 0


def synchronize(device=None):
    """Wait for the accelerator's queued work (nothing where there is none)."""
    if backend.cuda_available():
        backend.synchronize("cuda")
