"""The float16 copy of a flat buffer that autocast computes with, and its gradient.

Under `mt.autocast` a parameter enters every op as a float16 tensor. For a parameter of a FlatParameters that tensor
is a leaf of this copy: the whole buffer is cast once per autocast region (one kernel), each parameter's float16
tensor is a view of it, and backward hands those leaves their float16 gradients. The buffer's settle() (which the
optimizer's step, clip_grad_norm_, GradientSync and GradScaler.unscale_ call first) then gathers them into the
copy's gradient array and writes it, as float32, into the flat gradient buffer: the float32 master weights and the
optimizer never see float16. One cast each way per step, where casting each parameter would be two kernels per
parameter (PyTorch's autocast casts each weight once per region too; its gradient reaches .grad through the cast)."""
import numpy as np

from ... import backend
from ...core.versions import increment_version
from ...tensor import Tensor


class HalfCopy:
    """buffer's values in `dtype` (float16): `leaves[i]` is parameter i's view, a leaf that collects its gradient."""

    def __init__(self, buffer, dtype):
        xp = backend.xp_of(buffer.data)
        self.buffer, self.dtype, self.region = buffer, np.dtype(dtype), None
        self.data, self.grad = xp.empty(buffer.size, dtype), xp.empty(buffer.size, dtype)
        self.leaves = []
        for p, lo, hi in zip(buffer.params, buffer.bounds, buffer.bounds[1:]):
            self.leaves.append(Tensor._make(self.data[lo:hi].reshape(p.shape), requires_grad=p.requires_grad))

    def leaf(self, i, region):
        """Parameter i's float16 leaf, the copy made again from the float32 buffer once per autocast region."""
        if self.region != region:
            self.data[...] = self.buffer.data        # (one cast of the whole buffer)
            increment_version(self.leaves)           # a graph that saved the old values refuses to backward
            self.region = region
        return self.leaves[i]

    def has_grads(self):
        return any(leaf.grad is not None for leaf in self.leaves)

    def gathered(self):
        """The leaves' gradients in one float16 array (zeros for a leaf without one); the leaves' .grad then None."""
        pieces = [leaf.grad for leaf in self.leaves]
        if all(g is not None and g.data.dtype == self.dtype for g in pieces):
            backend.xp_of(self.grad).concatenate([g.data.reshape(-1) for g in pieces], out=self.grad)
        else:
            for g, lo, hi in zip(pieces, self.buffer.bounds, self.buffer.bounds[1:]):
                if g is None:
                    self.grad[lo:hi] = 0
                else:
                    self.grad[lo:hi] = g.data.reshape(-1)
        self.zero_grad()
        return self.grad

    def zero_grad(self):
        for leaf in self.leaves:
            leaf.grad = None
