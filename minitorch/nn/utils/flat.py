"""Flat parameter storage: the parameters of one dtype and device as views of one contiguous array, and their
gradients as views of another, allocated once.

On a GPU the update phase of a step costs a few kernel launches per parameter tensor (zeroing, clipping, Adam); over
flat buffers it is a few in all: one fill, one norm and one scale, one fused optimizer kernel, one all-reduce. The
optimizer and GradientSync flatten their parameters when they are made (`flatten_parameters`); a parameter that is
already flat stays where it is, so several optimizers and a GradientSync share the buffers. Everything that works on
flat parameters works on `spans`: runs of consecutive parameters of one buffer (one per buffer when the parameters
are a whole model's).

Invariants kept by Parameter's `data`/`grad` setters (nn/module.py) and this file: a flat parameter's `data` is its
view; its `grad` is None (and its slot of the gradient buffer holds zeros), the Tensor `grad_tensors[i]` wrapping its
slot, or ("loose") a Tensor recorded by backward(create_graph=True), which `settle()` copies into the slot.
"""
from typing import NamedTuple

import numpy as np

from ... import backend
from ...tensor import Tensor

# On the CPU a kernel runs over the buffers in pieces of CHUNK elements: NumPy makes one temporary per operation of
# the body, and pieces this size keep those and the operands in cache through the body's several passes
# (docs/design.md gives the measured times).
CHUNK = 1 << 16
# Room after the gradients for a few numbers (the loss, a stop vote) that ride along in GradientSync's all-reduce.
SPARE = 4


class FlatParameters:
    """Parameters of one dtype and device laid end to end: p.data is a view of `.data`, p.grad one of `.grad`."""

    def __init__(self, params):
        first = params[0].data
        self.dtype, self.device, self.params = first.dtype, backend.device_of(first), list(params)
        self.index = {id(p): i for i, p in enumerate(self.params)}
        self.bounds = [0]
        for p in self.params:
            self.bounds.append(self.bounds[-1] + p.size)
        self.size, self.loose = self.bounds[-1], set()
        xp = backend.xp_of(first)
        old = [(p.data, p.grad) for p in self.params]
        self._allocate(xp.empty(self.size, self.dtype), xp.zeros(self.size + SPARE, self.dtype))
        for i, (p, (data, grad)) in enumerate(zip(self.params, old)):
            self.views[i][...] = data
            _DATA.__set__(p, self.views[i])
            p._flat = self
            p.grad = grad   # through the setter: its values go into the slot

    def _allocate(self, data, grad_storage):
        """Point every parameter at its views of data and grad_storage (its gradient left as it is)."""
        self.data, self.grad_storage, self.grad = data, grad_storage, grad_storage[:self.size]
        self.views, self.grad_tensors = [], []
        for p, lo, hi in zip(self.params, self.bounds, self.bounds[1:]):
            self.views.append(data[lo:hi].reshape(p.shape))
            self.grad_tensors.append(Tensor._make(self.grad[lo:hi].reshape(p.shape)))
            _DATA.__set__(p, self.views[-1])

    # ----- what Parameter's setters call -----
    def set_data(self, p, value):
        """p.data = value for a flat parameter: the values are copied into its view (the storage stays flat)."""
        view = self.views[self.index[id(p)]]
        if value is view:
            return
        if not (backend.is_array(value) and tuple(value.shape) == view.shape and value.dtype == self.dtype
                and backend.device_of(value) == self.device):
            got = (f"an array of shape {tuple(value.shape)}, dtype {value.dtype} on {backend.device_of(value)}"
                   if backend.is_array(value) else f"a {type(value).__name__}")
            raise RuntimeError(f"p.data = {got}: this parameter is a view of a flat {self.dtype} buffer on "
                               f"{self.device} (made by an optimizer or GradientSync), so it takes only arrays of its "
                               f"shape {view.shape}, dtype and device, whose values are copied in; change a model's "
                               f"dtype, device or shapes before making its optimizer")
        view[...] = value

    def set_grad(self, p, value):
        """p.grad = value for a flat parameter: None zeroes its slot; a Tensor's values are copied into it (a Tensor
        recorded by create_graph=True is kept as it is, "loose", until settle())."""
        i = self.index[id(p)]
        slot = self.grad_tensors[i]
        self.loose.discard(i)
        if value is None or value is slot:
            if value is None and _GRAD.__get__(p) is not None:
                slot.data.fill(0)
            _GRAD.__set__(p, value)
            return
        if not isinstance(value, Tensor) or value.shape != slot.shape or value.device != self.device:
            got = (f"a Tensor of shape {value.shape} on {value.device}" if isinstance(value, Tensor)
                   else f"a {type(value).__name__}")
            raise RuntimeError(f"p.grad = {got}: the gradient of a parameter of shape {slot.shape} on {self.device} "
                               f"must be a Tensor of that shape and device")
        if value.requires_grad:
            self.loose.add(i)
            _GRAD.__set__(p, value)
            return
        slot.data[...] = value.data
        _GRAD.__set__(p, slot)

    # ----- what the update phase calls -----
    def settle(self):
        """Copy the values of loose gradients (left by backward(create_graph=True)) into their slots, so that the
        flat buffer holds every gradient; those parameters' .grad become their slot (without the graph)."""
        for i in sorted(self.loose):
            p = self.params[i]
            self.set_grad(p, Tensor._make(_GRAD.__get__(p).data))

    def to(self, device):
        """Move the buffers, and so every parameter of this buffer, to device (Module.to)."""
        if device == self.device:
            return
        grads = [_GRAD.__get__(p) for p in self.params]
        self._allocate(backend.to_device(self.data, device), backend.to_device(self.grad_storage, device))
        self.device = device
        for i, (p, g) in enumerate(zip(self.params, grads)):
            if i in self.loose:
                g.data = backend.to_device(g.data, device)
            _GRAD.__set__(p, g if g is None or i in self.loose else self.grad_tensors[i])


class Span(NamedTuple):
    """Parameters first..stop-1 of a FlatParameters: their data and gradients are one slice of its buffers."""
    group: FlatParameters
    first: int
    stop: int

    @property
    def lo(self):
        return self.group.bounds[self.first]

    @property
    def hi(self):
        return self.group.bounds[self.stop]

    def grad(self):
        return self.group.grad[self.lo:self.hi]


def flatten_parameters(params):
    """Store params (each once, tied weights too) as views of one flat buffer per (dtype, device), with their
    gradients in another; parameters that are flat already stay where they are, and plain Tensors (not Parameters)
    as they are (see others()). Returns spans(params)."""
    groups = {}
    for p in dict.fromkeys(params):
        if getattr(p, "_flat", False) is None:   # a Parameter not flat yet (a plain Tensor has no _flat)
            groups.setdefault((p.dtype, p.device), []).append(p)
    for members in groups.values():
        FlatParameters(members)
    return spans(params)


def spans(params):
    """The flat parameters among params as Spans, in buffer order (each parameter once); the others are left out."""
    found = {}
    for p in params:
        group = getattr(p, "_flat", None)
        if group is not None:
            found.setdefault(id(group), (group, set()))[1].add(group.index[id(p)])
    result = []
    for group, indices in found.values():
        for i in sorted(indices):
            if result and result[-1].group is group and result[-1].stop == i:
                result[-1] = result[-1]._replace(stop=i + 1)
            else:
                result.append(Span(group, i, i + 1))
    return result


def others(params):
    """The tensors of params that are not flat (each once): plain Tensors, Parameters no optimizer has flattened."""
    return [p for p in dict.fromkeys(params) if getattr(p, "_flat", None) is None]


def zero_grad(params, set_to_none=True):
    """Zero params' gradients: one fill per span of flat ones. set_to_none=True (PyTorch's default) makes every .grad
    None; False keeps each as a Tensor of zeros (for a flat parameter, the view of its slot)."""
    for span in spans(params):
        span.grad().fill(0)
        group = span.group
        for i in range(span.first, span.stop):
            group.loose.discard(i)
            _GRAD.__set__(group.params[i], None if set_to_none else group.grad_tensors[i])
    for p in others(params):
        if set_to_none or p.grad is None:
            p.grad = None
        else:
            p.grad = Tensor._make(backend.xp_of(p.grad.data).zeros_like(p.grad.data))


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


# the storage of Tensor's slots, under Parameter's properties
_DATA, _GRAD = Tensor.data, Tensor.grad
