"""Function: one differentiable op, its forward and its backward side by side; Node: a value in the graph.

    class Mul(Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)      # declare what backward reads: inputs, the output, or masks
            return a * b
        def backward(self, g):                # one gradient per input, None where there is none
            a, b = self.saved_tensors
            return g * b, g * a               # d(ab) = b da + a db

`Function.apply(*inputs, **options)` runs forward on the inputs' arrays and, when a gradient is needed, records the op
as the output's `_op` with the inputs as its `parents`. The walk (backward.py) later calls backward with the gradient
of the output and hands what it returns to the parents.

This module and backward.py are the engine: they import neither Tensor nor any op. Tensor is a Node (tensor.py); the
engine makes new nodes with `node._new(array)`, so it never names the class.

Kernels: an op may have faster implementations for a device (a CPU path that works in place, GPU kernels made with
`backend.fuse`), kept apart in minitorch/kernels/ and registered with `@kernel(Op, device)`. `apply` picks one here,
in one place; `reference_ops()` turns them off, so that every op runs the code of its own class.
"""
import contextlib
import itertools

from .. import backend
from . import anomaly_mode, versions
from .grad_mode import state
from .node import Node

# (op class, device) -> its kernel class, filled by the @kernel decorators of minitorch/kernels/
KERNELS = {}
# numbers the recorded ops in order: an op reads the values its inputs had when it was recorded (node.as_of)
_SEQUENCE = itertools.count()


def kernel(op, device):
    """Class decorator: register a subclass of `op` as its implementation on `device` ('cpu' or 'cuda').

    A kernel is a drop-in: the same inputs, options, output and gradients as its reference op (tests/engine/
    test_kernels.py checks each against it); it may save other arrays. Under create_graph=True the engine replays the
    reference op instead (higher_order.py, _twin), so a kernel's backward only ever sees arrays."""
    def register(cls):
        if not issubclass(cls, op):
            raise TypeError(f"kernel {cls.__name__} must subclass the op it implements, {op.__name__}")
        cls.reference = op
        KERNELS[(op, device)] = cls
        return cls
    return register


def _check_one_device(cls, tensors):
    """Raise when the tensors of one op live on different devices."""
    devices = [backend.device_of(t.data) for t in tensors]
    if len(set(devices)) > 1:
        raise RuntimeError(f"{cls.__name__}: tensors on different devices ({devices[0]} and "
                           f"{next(d for d in devices if d != devices[0])}); move them with .to(device) first")


@contextlib.contextmanager
def reference_ops():
    """Inside this block (in this thread) every op runs its reference code: the kernels of minitorch/kernels/ are
    not used. For learners reading an op, and for the tests that compare a kernel with its reference."""
    previous = state.kernels
    state.kernels = False
    try:
        yield
    finally:
        state.kernels = previous


class Function:
    """One differentiable op. Subclasses define forward and backward; users call `apply`.

    - `forward(self, *arrays, **options)` computes the output from arrays (NumPy or CuPy: `backend.xp_of(a)`) and
      declares with `save_for_backward` every array its backward reads. `self.needs_input_grad` (one bool per input)
      is set before it, so forward can save only what is needed.
    - `backward(self, g)` returns one gradient per input (None where there is none), possibly in the broadcast shape
      of the output: the engine undoes broadcasting (backward.unbroadcast).
    - What may be saved: the op's input arrays and its output (under create_graph=True the engine hands backward the
      graph's Tensors in their place, so the same formulas record a graph), and arrays that carry no gradient (bool
      masks, integer indices). Python values (shapes, dims, flags) are plain attributes. A float array computed from
      the inputs is not saved by a reference op: backward recomputes it from what was saved.
    """

    needs_float = False  # ops whose math needs real numbers (exp, log, ...) refuse integer inputs with a clear message
    # True for an op whose output may be a view of its first input's memory (reshape, permute, basic indexing): the
    # output then shares the input's version counter, so that an in-place change through either is seen by both
    is_view = False
    # the engine sets this just before backward: False when no second backward will run through this op
    # (backward(retain_graph=False), the default), so a kernel may write its result into an array it saved
    retain_graph = True
    reference = None  # a kernel's reference op (set by @kernel); None for a reference op itself
    saved = ()        # what save_for_backward declared

    @classmethod
    def apply(cls, *inputs, **options):
        """Run the op on Tensors (and plain arrays or numbers; at least one Tensor); record it in the graph if a
        gradient is needed. The op's kernel for the inputs' device runs instead of its own code, if it has one."""
        # This runs once per op of every step, so it is written for the host's time: list comprehensions over the
        # inputs and no property calls (a GPU step is bound by this Python, not the arithmetic: bench --host).
        tensors = [x for x in inputs if isinstance(x, Node)]
        if not tensors:
            raise TypeError(f"{cls.__name__}.apply: at least one input must be a Tensor")
        first = tensors[0]
        kind, requires_grad = type(first.data), False
        for t in tensors:
            if type(t.data) is not kind:   # (a NumPy scalar beside an array is fine; two devices are not)
                _check_one_device(cls, tensors)
            if cls.needs_float and t.data.dtype.kind not in "fc":
                raise TypeError(f"{cls.__name__} needs a floating-point tensor, got dtype {t.data.dtype}; "
                                f"convert with .float() or .double()")
            requires_grad = requires_grad or t.requires_grad
        grad_enabled = state.grad_enabled
        requires_grad = requires_grad and grad_enabled
        op = (KERNELS.get((cls, backend.device_of(first.data)), cls) if state.kernels else cls)()
        op.needs_input_grad = tuple([isinstance(x, Node) and x.requires_grad for x in inputs]) if requires_grad \
            else (False,) * len(inputs)
        arrays = [x.data if isinstance(x, Node) else x for x in inputs]
        hook = state.op_hook
        result = op.forward(*arrays, **options) if hook is None else hook(op, "forward", arrays, options)
        out = first._new(result, requires_grad)
        if cls.is_view and versions.same_buffer(result, arrays[0]):
            out._version_counter = first._version_counter
        if requires_grad:
            op.parents, op.options, op.seq = inputs, options, next(_SEQUENCE)
            if op.saved:  # only a saved array can be changed in place under backward's feet
                op._saved_versions = versions.record(tensors, out)
            if state.anomaly:
                anomaly_mode.record_stack(op)
            out._op = op
        elif grad_enabled:  # carry the name of a non-differentiable op that cut the graph, for backward's error
            out._cut_by = next((t._cut_by for t in tensors if t._cut_by), None)
        return out

    def forward(self, *arrays, **options):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    def save_for_backward(self, *values):
        """Declare what backward reads (arrays, or None): read back, in order, as `self.saved_tensors`."""
        self.saved = values

    @property
    def saved_tensors(self):
        """What forward declared with save_for_backward (Tensors in place of arrays under create_graph=True)."""
        return self.saved


__all__ = ["Function", "kernel", "reference_ops", "KERNELS"]
