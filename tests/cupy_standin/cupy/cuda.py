"""cupy.cuda as far as the project touches it: one device, its stream, its memory pool, runtime facts; no NCCL."""
import types

from . import _core
from ._core import NAMES, MemoryPointer, record_sync

_VERSION = 12080  # what runtimeGetVersion reports: CUDA 12.8


class Device:
    """The one stand-in GPU (id 0)."""

    def __init__(self, device=None):
        device = 0 if device is None else int(device)
        if device != 0:
            raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {device} (the stand-in has one GPU)")
        self.id = device

    def use(self):
        pass

    def synchronize(self):
        record_sync("synchronize")

    @property
    def pci_bus_id(self):
        return "0000:00:00.0"

    @property
    def compute_capability(self):
        return "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<CUDA Device {self.id} (stand-in)>"


class Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptr=0):
        self.ptr = ptr

    def synchronize(self):
        record_sync("synchronize")

    def use(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self._time = None

    def record(self, stream=None):
        import time
        self._time = time.perf_counter()

    def synchronize(self):
        record_sync("synchronize")


def get_elapsed_time(start_event, end_event):
    return (end_event._time - start_event._time) * 1000.0


_current = Stream()


def get_current_stream(device_id=None):
    return _current


def get_device_id():
    return 0


def is_available():
    return True


class _Runtime(types.ModuleType):
    """cupy.cuda.runtime: device count and facts."""
    cudaErrorNoDevice = 100

    class CUDARuntimeError(RuntimeError):
        pass

    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def setDevice(device):
        Device(device)

    @staticmethod
    def runtimeGetVersion():
        return _VERSION

    @staticmethod
    def driverGetVersion():
        return _VERSION

    @staticmethod
    def getDeviceProperties(device):
        Device(device)
        return {"name": b"CuPy stand-in (NumPy on the CPU)", "totalGlobalMem": 0, "multiProcessorCount": 1,
                "major": 9, "minor": 0}

    @staticmethod
    def deviceSynchronize():
        record_sync("synchronize")

    @staticmethod
    def memGetInfo():
        return 0, 0

    is_hip = False


runtime = _Runtime("cupy.cuda.runtime")

_OWN = {"Device": Device, "Stream": Stream, "Event": Event, "MemoryPointer": MemoryPointer,
        "get_current_stream": get_current_stream, "get_device_id": get_device_id, "is_available": is_available,
        "get_elapsed_time": get_elapsed_time, "runtime": runtime}


def _not_modelled(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"cupy.cuda.{name} exists in CuPy but the CuPy stand-in does not model it")
    return f


def __getattr__(name):
    # nccl is absent: CuPy raises ImportError for it when built without NCCL, as the stand-in is
    if name in NAMES["cupy.cuda"]:
        return _not_modelled(name)
    raise AttributeError(f"module 'cupy.cuda' has no attribute '{name}'")


globals().update(_OWN)
_ = _core
