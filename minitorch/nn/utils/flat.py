"""Flat parameter storage, as an explicit object: `flat = FlatParameters(model)` lays the parameters of one dtype
and device end to end in one contiguous array (each parameter's .data a view of it) and makes each .grad a view of
one flat gradient array, allocated once. The training step builds it and hands it to the optimizer (`Adam(flat)`),
to `clip_grad_norm_(flat, ...)` and to `GradientSync(flat, world)`; given plain parameters these work per tensor.

On a GPU the update phase of a step costs a few kernel launches per parameter tensor (zeroing, accumulating, clipping,
Adam); over flat buffers it is a few in all: one concatenation of the gradients, one norm and one scale, one fused
optimizer kernel, one all-reduce.

The rule for user code (nothing on Parameter is overridden, so nothing stops an assignment): the buffers are the
truth, and `settle()`, which the optimizer's step, clip_grad_norm_ and GradientSync call before they read them,
takes back whatever was reassigned. A parameter whose .data was replaced (p.data = array, load_state_dict,
model.to(device)) gets the array's values copied into its view and its view back (an array of another shape or dtype
is a RuntimeError; all of one buffer's parameters moved to another device move the buffer). A .grad replaced by a
Tensor (p.grad = t, a backward(create_graph=True)) is copied into its slot, and the slot put back; a .grad set to
None zeroes the slot and stays None (the optimizer skips that parameter, as PyTorch does).

Gradients, step by step: `zero_grad()` sets every .grad to None (no fill, as PyTorch's set_to_none); the backward
gives each parameter the gradient array its op made, without a copy (core/backward.py); `settle()` then writes them
all into the flat buffer with one concatenation and points each .grad at its slot again. A parameter that backward
does not reach keeps .grad None, and the optimizer skips it. A second backward before settle() adds into .grad as
usual; one after it adds into the slots.
"""
import weakref

import numpy as np

from ... import backend
from ...tensor import Tensor
from .half_copy import HalfCopy

# On the CPU a kernel runs over the buffers in pieces of CHUNK elements: NumPy makes one temporary per operation of
# the body, and pieces this size keep those and the operands in cache through the body's several passes
# (docs/design.md gives the measured times).
CHUNK = 1 << 16
# Room after the gradients for a few numbers (the loss, a stop vote) that ride along in GradientSync's all-reduce.
SPARE = 4
# id(data buffer) -> its FlatBuffer, so that a parameter is not put into two FlatParameters (they would fight over it)
_OWNERS = weakref.WeakValueDictionary()


class FlatParameters:
    """params (an iterable of leaf tensors, or a Module) as one FlatBuffer per (dtype, device), each listed once."""

    def __init__(self, params):
        params = params.parameters() if hasattr(params, "parameters") else params
        self.params = list(dict.fromkeys(params))   # tied weights once, in the given order
        if not self.params:
            raise ValueError("FlatParameters: got an empty parameter list")
        for p in self.params:
            base = getattr(p.data, "base", None)
            if base is not None and id(base) in _OWNERS and _OWNERS[id(base)].data is base:
                raise RuntimeError("FlatParameters: a parameter is in another FlatParameters already; make one per "
                                   "model and hand it to the optimizer and GradientSync")
        members = {}
        for p in self.params:
            members.setdefault((p.dtype, p.device), []).append(p)
        self.buffers = [FlatBuffer(ps) for ps in members.values()]   # one per dtype and device
        for buffer in self.buffers:   # (weakly: an optimizer given the parameters alone finds the FlatParameters)
            buffer.owner = weakref.ref(self)

    def __iter__(self):
        return iter(self.params)

    def zero_grad(self):
        """Every parameter's .grad becomes None, as PyTorch's zero_grad(set_to_none=True) makes it: no fill. The next
        backward hands each parameter the gradient array its op made, and settle() gathers them into the buffer."""
        for p in self.params:
            p.grad = None
        for buffer in self.buffers:
            if buffer.half is not None:
                buffer.half.zero_grad()

    def settle(self):
        """Take back reassigned .data and .grad (the module docstring's rule), so the buffers hold every value."""
        for buffer in self.buffers:
            buffer.settle()

    def to(self, device):
        """Move the buffers (values and gradients), and so every parameter, to device; returns self."""
        device = backend.check_device(device)
        self.settle()
        for buffer in self.buffers:
            buffer.to(device)
        return self


class FlatBuffer:
    """Parameters of one dtype and device laid end to end: p.data is a view of `.data`, p.grad one of `.grad`."""

    owner = None   # a weak reference to the FlatParameters that made it
    half = None    # its float16 copy under autocast (half_copy.HalfCopy), made at the first use

    def __init__(self, params):
        first = params[0].data
        self.dtype, self.device, self.params = first.dtype, backend.device_of(first), list(params)
        self.bounds = [0]
        for p in self.params:
            self.bounds.append(self.bounds[-1] + p.numel())
        self.size = self.bounds[-1]
        xp = backend.xp_of(first)
        old = [(p.data, p.grad) for p in self.params]
        self._allocate(xp.empty(self.size, self.dtype), xp.zeros(self.size + SPARE, self.dtype))
        for i, (data, grad) in enumerate(old):
            self.views[i][...] = data
            if grad is not None:
                self.grad_tensors[i].data[...] = grad.data
        self._point()

    def _allocate(self, data, grad_storage):
        """Make the views of data and grad_storage (the parameters are not touched)."""
        if hasattr(self, "data"):
            _OWNERS.pop(id(self.data), None)
        self.half = None   # (made again, of the new buffer, at the next autocast use)
        self.data, self.grad_storage, self.grad = data, grad_storage, grad_storage[:self.size]
        self.views, self.grad_views, self.grad_tensors = [], [], []
        for p, lo, hi in zip(self.params, self.bounds, self.bounds[1:]):
            self.views.append(data[lo:hi].reshape(p.shape))
            self.grad_views.append(self.grad[lo:hi].reshape(p.shape))
            self.grad_tensors.append(Tensor._make(self.grad_views[-1]))
        _OWNERS[id(data)] = self

    def _point(self):
        """Every parameter's .data is its view and its .grad the Tensor of its gradient slot (None if it is frozen:
        requires_grad False, so that weight decay leaves it alone)."""
        for p, view, slot in zip(self.params, self.views, self.grad_tensors):
            p.data, p.grad = view, slot if p.requires_grad else None

    def half_leaf(self, i, dtype, region):
        """Parameter i as a leaf of the buffer's float16 copy (half_copy.py), made again once per autocast region."""
        if self.half is None or self.half.dtype != dtype:
            self.half = HalfCopy(self, dtype)
        return self.half.leaf(i, region)

    def settle(self):
        self._take_data()
        if self.half is not None and self.half.has_grads():
            return self._settle_half()
        self._settle_grads()

    def _settle_half(self):
        """The float16 gradients of an autocast backward, gathered and written into the float32 buffer as float32
        (added to float32 gradients that came too)."""
        half_grad = self.half.gathered()
        if all(p.grad is None for p in self.params):   # (the usual autocast step: one cast, no add)
            self.grad[...] = half_grad
        else:
            self._settle_grads()
            self.grad += half_grad
        for p, view, slot in zip(self.params, self.grad_views, self.grad_tensors):
            slot.data = view
            p.grad = slot if p.requires_grad else None

    def _settle_grads(self):
        pieces = []
        for p, gview in zip(self.params, self.grad_views):
            g = p.grad
            if g is None or g.data is gview or type(g.data) is not type(gview) or g.data.dtype != self.dtype:
                break
            pieces.append(g.data.reshape(-1))
        else:   # the usual step (zero_grad, then one backward): every gradient an array of its own, one copy in all
            backend.xp_of(self.grad).concatenate(pieces, out=self.grad)
            for p, view, slot in zip(self.params, self.grad_views, self.grad_tensors):
                slot.data = view   # in case user code (Module.to) replaced the slot Tensor's array
                p.grad = slot
            return
        for p, gview, slot in zip(self.params, self.grad_views, self.grad_tensors):
            g = p.grad
            if g is None:
                if p.requires_grad:
                    gview.fill(0)   # (only after user code set it None: zero_grad() puts the slot back)
            elif g.data is not gview:
                _copy_into(gview, g.data, "p.grad")
                slot.data = gview
                p.grad = slot

    def _take_data(self):
        """Copy reassigned .data into the views (moving the buffers first if every parameter moved device)."""
        for p, view in zip(self.params, self.views):
            if p.data is not view:
                break
        else:   # every view in place (each step but those after a load or a move): nothing to take
            return
        moved = {backend.device_of(p.data) for p in self.params}
        if moved != {self.device}:
            if len(moved) > 1:
                raise RuntimeError(f"the parameters of one flat {self.dtype} buffer are now on {sorted(moved)}: "
                                   f"move a model whose FlatParameters holds other parameters too with "
                                   f"FlatParameters.to(), or build the FlatParameters after moving the models")
            self._allocate(backend.to_device(self.data, *moved), backend.to_device(self.grad_storage, *moved))
            self.device = moved.pop()
        for p, view in zip(self.params, self.views):
            if p.data is not view:
                _copy_into(view, p.data, "p.data")
                p.data = view

    def to(self, device):
        """Move the buffers to device and point the parameters at the new views (call after settle())."""
        if device == self.device:
            return
        had = [p.grad is not None for p in self.params]
        self._allocate(backend.to_device(self.data, device), backend.to_device(self.grad_storage, device))
        self.device = device
        self._point()
        for p, h in zip(self.params, had):
            if not h:
                p.grad = None


def buffer_of(p):
    """(the FlatBuffer whose view p.data is, p's index in it), or None for a parameter stored on its own."""
    base = getattr(p.data, "base", None)
    buffer = _OWNERS.get(id(base)) if base is not None else None
    if buffer is None or buffer.data is not base:
        return None
    for i, q in enumerate(buffer.params):
        if q is p:
            return buffer, i
    return None


def _copy_into(view, array, what):
    """view[...] = array, for an array of view's shape, dtype and device (anything else is a RuntimeError)."""
    if not (backend.is_array(array) and tuple(array.shape) == view.shape and array.dtype == view.dtype
            and backend.device_of(array) == backend.device_of(view)):
        got = (f"an array of shape {tuple(array.shape)}, dtype {array.dtype} on {backend.device_of(array)}"
               if backend.is_array(array) else f"a {type(array).__name__}")
        raise RuntimeError(f"{what} of a flat parameter was set to {got}; its slot of the flat buffer has shape "
                           f"{view.shape}, dtype {view.dtype} on {backend.device_of(view)}: change a model's "
                           f"dtype or shapes before building its FlatParameters")
    view[...] = array


def run(kernel, arrays, *scalars):
    """kernel(*arrays, *scalars) (a backend.fuse kernel that updates arrays in place): one launch on a GPU; on the CPU
    over CHUNK-sized pieces when the arrays are 1-D (flat buffers)."""
    if backend.device_of(arrays[0]) != "cpu" or arrays[0].ndim != 1 or arrays[0].size <= CHUNK:
        kernel(*arrays, *scalars)
        return
    for lo in range(0, arrays[0].size, CHUNK):
        kernel(*(a[lo:lo + CHUNK] for a in arrays), *scalars)


def run_sum(kernel, array):
    """kernel(array), a backend.fuse kernel ending in a sum, as a 0-d array of array's dtype; on the CPU summed over
    CHUNK-sized pieces (in float64) when array is 1-D."""
    xp = backend.xp_of(array)
    if xp is not np or array.ndim != 1 or array.size <= CHUNK:
        return xp.asarray(kernel(array))
    total = sum(float(kernel(array[lo:lo + CHUNK])) for lo in range(0, array.size, CHUNK))
    return xp.asarray(total, dtype=array.dtype)
