"""Summing gradients across ranks after each backward, through a few large flat buffers ("buckets").

One collective call per bucket instead of one per tensor: a Transformer has ~100 parameter tensors, and each call
has a fixed cost (latency, Python, a kernel launch on GPUs). The gradients are copied into the buckets, reduced in
place, and copied back. A few extra numbers (the loss, a stop flag) ride along in the last bucket, so they cost no
call of their own.
"""
from .. import backend
from ..tensor import Tensor

BUCKET_BYTES = 32 << 20


class _Bucket:
    """Consecutive parameters of one dtype and device, laid end to end in one flat array."""

    def __init__(self, dtype, device):
        self.dtype, self.device = dtype, device
        self.entries, self.size, self.flat = [], 0, None   # entries: (parameter, offset into flat)

    def takes(self, p, bucket_bytes):
        return (p.data.dtype, backend.device_of(p.data)) == (self.dtype, self.device) and \
            (self.size + p.data.size) * p.data.itemsize <= bucket_bytes

    def add(self, p):
        self.entries.append((p, self.size))
        self.size += p.data.size

    def pack(self):
        for p, offset in self.entries:
            view = self.flat[offset:offset + p.data.size]
            view[...] = 0 if p.grad is None else p.grad.data.reshape(-1)

    def unpack(self):
        for p, offset in self.entries:
            summed = self.flat[offset:offset + p.data.size].reshape(p.data.shape)
            if p.grad is None:
                p.grad = Tensor._make(summed.copy())
            else:
                p.grad.data[...] = summed


class GradientSync:
    """sync(extras) -> extras summed over ranks (a 1-D array); each parameter's .grad becomes the sum over ranks of
    its .grad.

    A parameter without a gradient on a rank counts as zeros there (a rank whose share of a batch was empty), and
    has one afterwards. The parameters must come in the same order on every rank (the same model).
    """

    def __init__(self, params, world, bucket_bytes=BUCKET_BYTES):
        self.world, self.buckets, self.n_extras = world, [], None
        for p in params:
            if not (self.buckets and self.buckets[-1].takes(p, bucket_bytes)):
                self.buckets.append(_Bucket(p.data.dtype, backend.device_of(p.data)))
            self.buckets[-1].add(p)

    def _allocate(self, n_extras):
        """The flat arrays, once (and again only if the number of extras changes); extras go at the end of the last."""
        for b in self.buckets:
            extra = n_extras if b is self.buckets[-1] else 0
            b.flat = backend.xp_of_device(b.device).zeros(b.size + extra, dtype=b.dtype)
        self.n_extras = n_extras

    def __call__(self, extras=()):
        """Sum the gradients over the ranks, and extras (numbers or 0-d arrays): their sums come back as a 1-D array
        on the parameters' device, not read, since reading it makes the host wait for the device (a training step
        reads it once, with the gradient norm)."""
        device = self.buckets[-1].device if self.buckets else "cpu"
        xp = backend.xp_of_device(device)
        dtype = self.buckets[-1].dtype if self.buckets else "float64"
        values = xp.stack([xp.asarray(x, dtype=dtype) for x in extras]) if len(extras) else xp.zeros(0, dtype)
        if self.world.size == 1:
            return values
        if not self.buckets:
            return self.world.allreduce_sum_(values)
        if self.n_extras != len(extras):
            self._allocate(len(extras))
        last = self.buckets[-1]
        for b in self.buckets:
            b.pack()
        last.flat[last.size:] = values
        for b in self.buckets:
            self.world.allreduce_sum_(b.flat)
            b.unpack()
        return last.flat[last.size:]


def broadcast_parameters(params, world, root=0):
    """Make every rank's parameters equal to root's (in place), so that all ranks start from the same weights."""
    for p in params:
        world.broadcast_(p.data, root)
