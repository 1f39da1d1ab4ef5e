"""PyTorch's spellings of dtypes and devices (torch.float, torch.long, torch.device("cpu")), as the NumPy dtypes and
device names minitorch uses, so that tutorial code that names them runs."""
import numpy as np

float = np.float32      # noqa: A001 (torch.float is float32)
double = np.float64
long = np.int64
int32 = np.int32


def device(type="cpu"):  # noqa: A002 (torch.device's argument name)
    """torch.device(name): here the device's name itself ("cpu", "cuda", "cuda:0" as "cuda")."""
    name = str(type).split(":")[0]
    if name not in ("cpu", "cuda"):
        raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
    return name
