"""Where the time of a forward and backward goes: each op's array work, per op class, through autograd's op hook.

    with OpProfiler("cpu") as prof:
        loss = model(x).sum(); loss.backward()
    prof.seconds[(MatMul, "forward")], prof.calls[...], prof.matmul_flops

An op called inside another op's forward or backward counts as part of the outer one. The time of Function.apply's
own bookkeeping (checks, making the output Tensor, recording the graph) stays outside the ops: it is Python overhead.
On a GPU each op is waited for, so that its time is its own (which makes the profiled run slower than a plain one).
"""
import time
import weakref
from collections import defaultdict

from .. import backend
from ..core import op_hook, reference_of
from ..ops import Linear, MatMul


def kind_of(cls):
    """matmul, fused (the hand-written fused ops) or elementwise/shape (the other primitive ops); a kernel is of its
    reference op's kind."""
    if issubclass(cls, (MatMul, Linear)):
        return "matmul"
    if reference_of(cls).__module__.startswith("minitorch.fused"):
        return "fused"
    return "elementwise/shape"


class OpProfiler:
    """While active, times every op's forward and backward, per op class, and counts the FLOPs of MatMul and Linear
    (F.linear) from the shapes of their arguments (forward: 2 out.size k; backward: the same for each of the two
    factors that gets a gradient)."""

    def __init__(self, device):
        self.device = device
        self.seconds = defaultdict(float)   # (class, "forward" | "backward") -> seconds
        self.calls = defaultdict(int)
        self.matmul_flops = 0
        self._depth = 0
        self._matmul_forward_flops = weakref.WeakKeyDictionary()   # a MatMul op -> its forward's FLOPs
        self._hook = None

    def __enter__(self):
        self._hook = op_hook(self._run)
        self._hook.__enter__()
        return self

    def __exit__(self, *exc):
        return self._hook.__exit__(*exc)

    def _run(self, op, phase, args, options):
        method = getattr(op, phase)
        if self._depth:
            return method(*args, **options)
        self._depth += 1
        start = time.perf_counter()
        try:
            out = method(*args, **options)
            backend.synchronize(self.device)
        finally:
            self._depth -= 1
        key = (type(op), phase)
        self.seconds[key] += time.perf_counter() - start
        self.calls[key] += 1
        if isinstance(op, (MatMul, Linear)):
            self._count_matmul(op, phase, args, out)
        return out

    def _count_matmul(self, op, phase, args, out):
        if phase == "forward":
            flops = 2 * out.size * args[0].shape[-1]   # out = a @ b: one multiply-add per output and inner index
            self._matmul_forward_flops[op] = flops
        else:   # a gradient for each input that needs one, each product the forward's size
            flops = self._matmul_forward_flops.get(op, 0) * sum(bool(n) for n in op.needs_input_grad[:2])   # (a bias
            # gradient is a sum, not a product)
        self.matmul_flops += flops
