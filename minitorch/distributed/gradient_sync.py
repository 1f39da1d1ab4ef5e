"""Summing gradients across ranks after each backward, in place in the flat gradient buffers.

One collective call per flat buffer instead of one per tensor: a Transformer has ~100 parameter tensors, and each
call has a fixed cost (latency, Python, a kernel launch on GPUs). The parameters are stored flat
(nn.utils.flatten_parameters, shared with the optimizer), so the gradients are summed where they are, without
copies. A few extra numbers (the loss, a stop flag) ride along in the room after the last buffer's gradients, so they
cost no call of their own.
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
        params = list(params)
        self.world = world
        self.spans = flat.flatten_parameters(params)
        self.plain = flat.others(params)   # plain Tensors (not Parameters): summed one call each

    def __call__(self, extras=()):
        """Sum the gradients over the ranks, and extras (numbers or 0-d arrays): their sums come back as a 1-D array
        on the parameters' device (a view, valid until the next zero_grad), not read, since reading it makes the
        host wait for the device (a training step reads it once, with the gradient norm)."""
        if self.world.size == 1 or not self.spans:
            values = self._stack(extras)
            return values if self.world.size == 1 else self.world.allreduce_sum_(values)
        for span in self.spans:
            span.group.settle()
        last = self.spans[-1].group
        rides = self.spans[-1].stop == len(last.params) and len(extras) <= flat.SPARE
        for span in self.spans[:-1] if rides else self.spans:
            self.world.allreduce_sum_(span.grad())
        if rides:
            n = last.size
            for i, x in enumerate(extras):
                last.grad_storage[n + i] = x
            self.world.allreduce_sum_(last.grad_storage[self.spans[-1].lo:n + len(extras)])
            values = last.grad_storage[n:n + len(extras)]
        else:
            values = self.world.allreduce_sum_(self._stack(extras))
        for span in self.spans:   # every parameter has a gradient now (zeros where a rank had none)
            for i in range(span.first, span.stop):
                span.group.params[i].grad = span.group.grad_tensors[i]
        for p in self.plain:
            if p.grad is None:
                p.grad = Tensor._make(backend.xp_of(p.data).zeros_like(p.data))
            self.world.allreduce_sum_(p.grad.data)
        return values

    def _stack(self, extras):
        """extras as one 1-D array on the device and in the dtype of the last flat buffer."""
        group = self.spans[-1].group if self.spans else None
        xp, dtype = backend.xp_of_device(group.device if group else "cpu"), group.dtype if group else "float64"
        return xp.stack([xp.asarray(x, dtype=dtype) for x in extras]) if len(extras) else xp.zeros(0, dtype)


def broadcast_parameters(params, world, root=0):
    """Make every rank's parameters equal to root's (in place), so that all ranks start from the same weights."""
    for p in params:
        world.broadcast_(p.data, root)
