"""Summing gradients across ranks after each backward, in place in the flat gradient buffers.

One collective call per flat buffer instead of one per tensor: a Transformer has ~100 parameter tensors, and each
call has a fixed cost (latency, Python, a kernel launch on GPUs). Given a FlatParameters (nn.utils.FlatParameters,
the one the optimizer was given), the gradients are summed where they are, without copies, and a few extra numbers
(the loss, a stop flag) ride along in the room after the last buffer's gradients, so they cost no call of their own.
Given plain parameters, it sums them one call per tensor.
"""
from .. import backend
from ..nn.utils import flat
from ..tensor import Tensor


class GradientSync:
    """sync(extras) -> extras summed over ranks (a 1-D array); each parameter's .grad becomes the sum over ranks of
    its .grad.

    A parameter without a gradient on a rank counts as zeros there (a rank whose share of a batch was empty), and
    has one afterwards. The parameters must come in the same order on every rank (the same model).
    """

    def __init__(self, params, world):
        self.world = world
        self.flat = params if isinstance(params, flat.FlatParameters) else None
        self.params = self.flat.params if self.flat else list(dict.fromkeys(params))

    def __call__(self, extras=()):
        """Sum the gradients over the ranks, and extras (numbers or 0-d arrays): their sums come back as a 1-D array
        on the parameters' device (a view, valid until the next zero_grad), not read, since reading it makes the
        host wait for the device (a training step reads it once, with the gradient norm)."""
        if self.world.size == 1 or not self.params:
            values = self._stack(extras)
            return values if self.world.size == 1 else self.world.allreduce_sum_(values)
        if not self.flat:
            for p in self.params:
                xp = backend.xp_of(p.data)
                if p.grad is None:
                    p.grad = Tensor._make(xp.zeros(p.shape, p.dtype))
                elif not p.grad.data.flags.c_contiguous:   # (a transposed gradient): the same layout on every rank
                    p.grad = Tensor._make(xp.ascontiguousarray(p.grad.data))
                self.world.allreduce_sum_(p.grad.data)
            return self.world.allreduce_sum_(self._stack(extras))
        self.flat.settle()   # takes back reassigned .data and .grad (nn/utils/flat.py)
        buffers = self.flat.buffers
        last = buffers[-1]
        rides = len(extras) <= flat.SPARE
        for buffer in buffers[:-1] if rides else buffers:
            self.world.allreduce_sum_(buffer.grad)
        if rides:
            n = last.size
            for i, x in enumerate(extras):
                last.grad_storage[n + i] = x
            self.world.allreduce_sum_(last.grad_storage[:n + len(extras)])
            values = last.grad_storage[n:n + len(extras)]
        else:
            values = self.world.allreduce_sum_(self._stack(extras))
        for buffer in buffers:   # every parameter has a gradient now (zeros where a rank had none)
            for p, slot in zip(buffer.params, buffer.grad_tensors):
                p.grad = slot
        return values

    def _stack(self, extras):
        """extras as one 1-D array on the device and in the dtype of the last flat buffer (or parameter)."""
        last = self.flat.buffers[-1].data if self.flat else self.params[-1].data if self.params else None
        xp = backend.xp_of(last) if last is not None else backend.xp_of_device("cpu")
        dtype = last.dtype if last is not None else "float64"
        return xp.stack([xp.asarray(x, dtype=dtype) for x in extras]) if len(extras) else xp.zeros(0, dtype)


def broadcast_parameters(params, world, root=0):
    """Make every rank's parameters equal to root's (in place), so that all ranks start from the same weights."""
    for p in params:
        world.broadcast_(p.data, root)
