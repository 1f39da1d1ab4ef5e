"""PyTorch's spellings of dtypes and devices (torch.float, torch.long, torch.device("cpu")), as the NumPy dtypes and
device names minitorch uses, so that tutorial code that names them runs."""
import numpy as np

from . import backend

float = np.float32      # noqa: A001 (torch.float is float32)
double = np.float64
float16 = half = np.float16   # mixed precision (mt.autocast)
long = np.int64
int32 = np.int32


class device(str):  # noqa: N801 (torch.device)
    """torch.device(name): the device's name itself ("cpu", "cuda"; "cuda:0" as "cuda", "cuda:1" kept so that
    backend.check_device can refuse a GPU other than the current one), a str wherever minitorch takes a device,
    with PyTorch's .type and .index. As a context (`with mt.device("meta"):`) it is the default device inside."""

    def __new__(cls, type="cpu", index=None):  # noqa: A002 (torch.device's argument name)
        name, _, given = str(type).partition(":")
        if name not in ("cpu", "cuda", "mps", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if name == "mps":
            raise RuntimeError("device('mps'): minitorch has no Apple GPU backend (torch.backends.mps.is_available() "
                               "is False here); use 'cpu' or 'cuda'")
        if given and index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
        if given and not given.isdigit():
            raise RuntimeError(f"Invalid device string: '{type}'")
        index = int(given) if given else index
        # "cuda:0" is "cuda" (the current GPU while the process runs on one); "cpu:0" is the one CPU, "cpu"
        return super().__new__(cls, f"{name}:{index}" if index and name == "cuda" else name)

    @property
    def type(self):  # noqa: A003
        return self.partition(":")[0]

    @property
    def index(self):
        name, _, index = self.partition(":")
        return int(index) if index else (0 if name == "cuda" else None)

    def __enter__(self):
        self._outer = backend.get_default_device()
        backend.set_default_device(str(self))
        return self

    def __exit__(self, *exc):
        backend.set_default_device(self._outer)
