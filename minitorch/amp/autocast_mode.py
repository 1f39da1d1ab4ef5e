"""mt.autocast: mixed precision as PyTorch users write it, `with mt.autocast("cuda", dtype=mt.float16): loss = ...`.

Inside the block, on tensors of its device:
- every float32 Parameter enters an op as a float16 tensor, made once per block: for a parameter of a FlatParameters
  a leaf of the buffer's float16 copy (one cast of the whole buffer, nn/utils/half_copy.py), whose gradient reaches
  the parameter's float32 .grad when the buffer is settled (the optimizer's step, clip_grad_norm_, GradScaler's
  unscale_ settle it first); for another parameter a recorded cast, whose backward casts the gradient back;
- the matrix products (matmul, linear, attention, convolution: ops with `autocast_to = "half"`) cast their other
  float32 inputs to float16 too, so they run in float16 with float32 accumulation (cuBLAS's CUBLAS_COMPUTE_32F);
- softmax, log-softmax, layer_norm, cross-entropy and attention's softmax take float16 and sum in float32 inside
  (fused/precision.py); cross-entropy's loss is float32;
- the other ops follow type promotion, so activations made from float16 stay float16.
Outside the block nothing changes: the parameters, their gradients and the optimizer stay float32 (master weights).
As PyTorch asks, a block wraps the forward and the loss, not backward or the optimizer's step: a parameter's float16
copy is made at its first use in the block, and an update inside the same block would not reach it.
"""
import functools
import itertools

import numpy as np

from .. import backend
from ..core.grad_mode import state
from ..tensor import Tensor

_REGIONS = itertools.count(1)   # each block's number: a flat buffer's float16 copy is made again in a new one


class autocast:  # noqa: N801 (torch.autocast)
    """with mt.autocast(device_type, dtype=mt.float16, enabled=True): the ops of the block in mixed precision (the
    module docstring). A decorator too. float16 only: NumPy has no bfloat16."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=True):
        device_type = str(device_type).partition(":")[0]
        if device_type not in backend.DEVICES:
            raise ValueError(f"autocast: device_type must be one of {backend.DEVICES}, got {device_type!r}")
        dtype = np.dtype(np.float16 if dtype is None else dtype)
        if dtype != np.float16:
            raise ValueError(f"autocast: dtype must be float16 (mt.float16), got {dtype}: minitorch has no bfloat16")
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, bool(enabled)
        self._previous, self._cache, self.region = [], {}, None

    def __enter__(self):
        self._previous.append(state.autocast)
        if self.enabled:
            self.region, self._cache = next(_REGIONS), {}
            state.autocast = self
        else:
            state.autocast = None
        return self

    def __exit__(self, *exc):
        state.autocast = self._previous.pop()
        self._cache = {}
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped

    def cast_inputs(self, cls, inputs):
        """The inputs of op cls as the block runs it: float32 Parameters (and, for a matrix product, every float32
        tensor) of the block's device in float16; the rest as they are. Called by Function.apply."""
        policy = getattr(cls, "autocast_to", "parameters")   # an op's own, where it declares one
        if policy == "none":
            return inputs
        half = policy == "half"
        out = None
        for k, x in enumerate(inputs):
            if isinstance(x, Tensor) and x.data.dtype == np.float32 and backend.device_of(x.data) == self.device_type:
                if _is_parameter(x):
                    cast = self.parameter(x)
                elif half:
                    cast = x.to(dtype=self.fast_dtype)
                else:
                    continue
                out = list(inputs) if out is None else out
                out[k] = cast
        return inputs if out is None else tuple(out)

    def parameter(self, p):
        """p in float16, made once in this block: a leaf of its flat buffer's float16 copy, or a recorded cast."""
        cached = self._cache.get(id(p))
        if cached is None or cached[0] is not p:
            found = _buffer_of(p)
            if found is not None:
                buffer, i = found
                cast = buffer.half_leaf(i, self.fast_dtype, self.region)
            else:
                cast = p.to(dtype=self.fast_dtype)
            cached = self._cache[id(p)] = (p, cast)
        return cached[1]


def _is_parameter(x):
    from ..nn.module import Parameter
    return isinstance(x, Parameter)


def _buffer_of(p):
    from ..nn.utils.flat import buffer_of
    return buffer_of(p)


def is_autocast_enabled():
    """True inside an enabled autocast block (in this thread)."""
    return state.autocast is not None


def get_autocast_dtype():
    """The dtype of the current autocast block (float16), or None outside one."""
    return None if state.autocast is None else state.autocast.fast_dtype
