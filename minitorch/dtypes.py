"""PyTorch's spellings of dtypes and devices (torch.float, torch.long, torch.device("cpu")), as the NumPy dtypes and
device names minitorch uses, so that tutorial code that names them runs."""
import numpy as np

float = np.float32      # noqa: A001 (torch.float is float32)
double = np.float64
long = np.int64
int32 = np.int32


class device(str):  # noqa: N801 (torch.device)
    """torch.device(name): the device's name itself ("cpu", "cuda"; "cuda:0" as "cuda"), a str wherever minitorch
    takes a device, with PyTorch's .type and .index."""

    def __new__(cls, type="cpu", index=None):  # noqa: A002 (torch.device's argument name)
        name = str(type).split(":")[0]
        if name not in ("cpu", "cuda", "mps"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if name == "mps":
            raise RuntimeError("device('mps'): minitorch has no Apple GPU backend (torch.backends.mps.is_available() "
                               "is False here); use 'cpu' or 'cuda'")
        return super().__new__(cls, name)

    @property
    def type(self):  # noqa: A003
        return str(self)

    @property
    def index(self):
        return 0 if self == "cuda" else None
