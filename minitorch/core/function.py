"""Function: one differentiable op, its forward and its backward side by side, and the graph node of its output.

    class Mul(Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)      # declare what backward reads: inputs, the output, or masks
            return a * b
        def backward(self, g):                # one gradient per input, None where there is none
            a, b = self.saved_tensors
            return g * b, g * a               # d(ab) = b da + a db

`Function.apply(*inputs, **options)` runs forward on the inputs' arrays and, when a gradient is needed, records the op
as the output's `_op`, with its inputs' graph nodes as its `parents`. The walk (backward.py) later calls backward with
the gradient of the output and hands what it returns to the parents.

This module and backward.py are the engine: they import neither Tensor nor any op. Tensor is a Value (value.py); the
engine makes new tensors with `value._new(array)`, so it never names the class.

Kernels: an op may have faster implementations for a device (a CPU path that works in place, GPU kernels made with
`backend.fuse`), kept apart in minitorch/kernels/ and registered with `@kernel(Op, device)`. `apply` picks one here,
in one place; `reference_ops()` turns them off, so that every op runs the code of its own class.
"""
import inspect
import itertools
import weakref

from .. import backend
from . import anomaly_mode, versions
from .grad_mode import state, using_config
from .value import Value

# (op class, device) -> its kernel class, filled by the @kernel decorators of minitorch/kernels/
KERNELS = {}
MADE = itertools.count()   # each recorded op's `seq`: the walk visits the latest made first (backward.py)


class _Freed:
    """What an op's `saved` becomes once backward released it (retain_graph=False)."""

    def __bool__(self):
        return False

    def __repr__(self):
        return "FREED"


FREED = _Freed()


class Constant:
    """What a node keeps of a Tensor input that needs no gradient (a mask, a batch): its shape and dtype, for the
    drawing of the graph, not its array (a graph holds only what its backward passes declared)."""
    __slots__ = ("out_shape", "out_dtype", "out_counter")
    requires_grad = _superseded = False

    def __init__(self, t):
        self.out_shape, self.out_dtype, self.out_counter = t.data.shape, t.data.dtype, t._version_counter


def kernel(op, device):
    """Class decorator: register a subclass of `op` as its implementation on `device` ('cpu' or 'cuda').

    A kernel is a drop-in: the same inputs, options, output and gradients as its reference op (tests/engine/
    test_kernels.py checks each against it). It saves what its reference saves (the same save_for_backward, and the
    Python attributes the reference's backward reads) and keeps its own extras in `kept`: under create_graph=True the
    engine runs the reference's backward on the kernel's node (higher_order.py), so a kernel's backward only ever
    sees arrays."""
    def register(cls):
        if not issubclass(cls, op):
            raise TypeError(f"kernel {cls.__name__} must subclass the op it implements, {op.__name__}")
        cls.reference = op
        op.has_kernels = True
        KERNELS[(op, device)] = cls
        return cls
    return register


def _read_inputs(cls, inputs):
    """(the first Tensor, each input's array (a number as it is), whether each needs a gradient) for cls.apply."""
    first, arrays, needs = None, [], []
    for x in inputs:   # (one loop, not a comprehension each: this runs for every op of every step)
        is_tensor = isinstance(x, Value)
        first = x if first is None and is_tensor else first
        arrays.append(x.data if is_tensor else x)
        needs.append(is_tensor and x.requires_grad)
        if is_tensor and (type(x.data) is not type(first.data) or cls.needs_float and x.data.dtype.kind not in "fc"):
            _check_inputs(cls, inputs)
    return (first if first is not None else _check_inputs(cls, inputs)), arrays, tuple(needs)


def _check_inputs(cls, inputs):
    """Raise for inputs an op cannot take: no Tensor, Tensors on two devices, or integers where it needs floats."""
    tensors = [x for x in inputs if isinstance(x, Value)]
    if not tensors:
        raise TypeError(f"{cls.__name__}.apply: at least one input must be a Tensor")
    devices = [backend.device_of(t.data) for t in tensors]   # (a NumPy scalar beside an array is fine)
    if len(set(devices)) > 1:
        raise RuntimeError(f"{cls.__name__}: tensors on different devices ({devices[0]} and "
                           f"{next(d for d in devices if d != devices[0])}); move them with .to(device) first")
    for t in tensors:
        if cls.needs_float and t.data.dtype.kind not in "fc":
            raise TypeError(f"{cls.__name__} needs a floating-point tensor, got dtype {t.data.dtype}; "
                            f"convert with .float() or .double()")


def reference_ops():
    """Inside this block (in this thread) every op runs its reference code: the kernels of minitorch/kernels/ are
    not used. For learners reading an op, and for the tests that compare a kernel with its reference."""
    return using_config("kernels", False)


class Function:
    """One differentiable op, and the graph node of its output. Subclasses define forward and backward; users call
    `apply`.

    - `forward(self, *arrays, **options)` computes the output from arrays (NumPy or CuPy: `backend.xp_of(a)`) and
      declares with `save_for_backward` every array its backward reads. `self.needs_input_grad` (one bool per input)
      is set before it, so forward can save only what is needed.
    - `backward(self, g)` returns one gradient per input (None where there is none), possibly in the broadcast shape
      of the output: the engine undoes broadcasting (backward.unbroadcast).
    - What may be saved: the op's input arrays and its output (under create_graph=True the engine hands backward the
      graph's Tensors in their place, so the same formulas record a graph: higher_order.py), and arrays that carry no
      gradient (bool masks, integer indices). Python values (shapes, dims, flags) are plain attributes. A float array
      computed from the inputs is not saved by a reference op: backward recomputes it from what was saved, unless
      forward keeps it in `self.kept` for speed (released with `saved`; under create_graph the engine drops it, and
      backward computes it again from the saved Tensors).

    A recorded op is a node of the graph: `parents` holds, per input, the input's node (the op that made it, or the
    Tensor itself for a leaf) where the input needs a gradient, else a `Constant` for a Tensor and None for an array
    or a number; `out_shape` and `out_dtype` are its output's (a leaf Value has them too). A node holds arrays only
    through `saved` and `kept`, not its output array (a backward that reads it saves it): a graph holds what its
    backward passes declared, as PyTorch's does.
    A node never changes: an in-place op on a tensor in the graph records a new op, which becomes the tensor's `_op`.
    """

    needs_float = False  # ops whose math needs real numbers (exp, log, ...) refuse integer inputs with a clear message
    # True for an op whose output may be a view of its first input's memory (reshape, permute, basic indexing): the
    # output then shares the input's version counter, so that an in-place change through either is seen by both
    is_view = False
    has_kernels = False  # set by @kernel on an op that has a kernel for some device
    reference = None     # a kernel's reference op (set by @kernel); None for a reference op itself
    saved = ()           # what save_for_backward declared; FREED once backward released it
    # with saved: the ids of its input arrays and output (what each saved value is: versions.roles)
    _ids = ()
    out_counter = None   # its output's version counter (several outputs: out_counters), for versions.check
    _changes = -1        # versions.changes at its forward: the walk checks the versions only if it has grown since
    _out_changes = -1    # versions.changes after write_in_place wrote its output into a tensor's memory
    seq = None           # when recorded, how many ops were recorded before it (MADE): the walk's order
    made_view = False    # True when a view op's output shares its input's memory (versions.refuse_stale_view)
    kept = None          # an intermediate forward kept so that backward need not compute it again (speed only)
    _hooks = None        # Tensor.register_hook on the output of this op: the hooks of a non-leaf live on its node
    _retained = None     # the output Tensor, when it asked with retain_grad() to keep its .grad
    _superseded = False  # True once an in-place op in the graph changed the output (versions.refuse_stale_view)
    materialize_grads = True   # several outputs: zeros (not None) for an output that got no gradient
    ctx_form_apply = None  # the apply of a Function written in PyTorch's form, set by ctx_form.py (built on this)
    # under mt.autocast: "half" casts every float32 input to float16 (matrix products), "none" casts nothing (casts,
    # moves); the default casts the Parameters alone (amp/autocast_mode.py)
    autocast_to = "parameters"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(inspect.getattr_static(cls, "forward"), staticmethod):   # PyTorch's form: forward(ctx, ...)
            cls.apply = classmethod(Function.ctx_form_apply)

    @classmethod
    def apply(cls, *inputs, **options):
        """Run the op on Tensors (and plain numbers or arrays); record it in the graph if a gradient is needed."""
        inputs = inputs if state.autocast is None else state.autocast.cast_inputs(cls, inputs)   # (mt.autocast)
        first, arrays, needs = _read_inputs(cls, inputs)
        record = state.grad_enabled and True in needs
        op = (KERNELS.get((cls, backend.device_of(first.data)), cls) if cls.has_kernels and state.kernels else cls)()
        op.needs_input_grad = needs if record else (False,) * len(inputs)
        result = op.forward(*arrays, **options) if not state.op_hook else state.op_hook(op, "forward", arrays, options)
        out = tuple([first._new(r, record) for r in result]) if type(result) is tuple else first._new(result, record)
        if cls.is_view and versions.same_buffer(result, arrays[0]):
            out._version_counter, op.made_view = first._version_counter, True
        if record:
            _record(op, inputs, arrays, result, out)
        elif state.grad_enabled:
            _carry_cut(out, inputs)
        return out

    def forward(self, *arrays, **options):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    def save_for_backward(self, *values):
        """Declare what backward reads (arrays, or None): read back, in order, as `self.saved_tensors`."""
        self.saved = values

    # what forward declared with save_for_backward (Tensors in place of arrays under create_graph=True)
    saved_tensors = property(lambda self: self.saved)

    @property
    def next_functions(self):
        """The graph as PyTorch shows it (grad_fn.next_functions): per input, (its node, which output of it), read
        from `parents`: (None, 0) for an input that needs no gradient, an AccumulateGrad for a leaf."""
        return tuple((None, 0) if p is None or type(p) is Constant else (p.parents[0], p.k) if type(p) is Output
                     else (AccumulateGrad.of(p), 0) if isinstance(p, Value) else (p, 0) for p in self.parents)

    def name(self):
        """PyTorch's name for this node: MulBackward0 (a PyTorch-form Function's node is <Name>Backward already)."""
        name = (self.reference or type(self)).__name__
        return name if name.endswith("Backward") else name + "Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


def _record(op, inputs, arrays, result, out):
    """Make op the graph node of out (or of a tuple: _give_outputs), with the ids of what it saved and the count of
    in-place changes so far (for versions.check)."""
    op.parents = tuple([x._op or x if need else Constant(x) if isinstance(x, Value) else None   # (no array held)
                        for x, need in zip(inputs, op.needs_input_grad)])
    op.seq, op._changes = next(MADE), versions.changes
    if op.saved:
        op._ids = [*map(id, arrays), *map(id, result)] if type(out) is tuple else [*map(id, arrays), id(result)]
    if state.anomaly:
        anomaly_mode.record_stack(op)
    if type(out) is tuple:   # (one output in a tuple too: a ctx-form forward may return (y,))
        return _give_outputs(op, result, out)
    op.out_shape, op.out_dtype, op.out_counter, out._op = result.shape, result.dtype, out._version_counter, op


def _give_outputs(op, results, outs):
    """Several outputs: output k's node is an Output that sends its gradient to slot k of op's (Gathered); op's
    backward then takes one gradient per output, zeros for one that got none."""
    op.outputs, op.out_shape, op.out_dtype = [(r.shape, r.dtype) for r in results], None, None
    op.out_counters = [t._version_counter for t in outs]
    for k, t in enumerate(outs):
        t._op = Output.of(op, k)


def _carry_cut(out, inputs):
    """Carry the name of a non-differentiable op that cut the graph (argmax, a comparison), for backward's error."""
    cut_by = next((t._cut_by for t in inputs if isinstance(t, Value) and t._cut_by), None)
    for t in out if type(out) is tuple else (out,):
        t._cut_by = cut_by


class Gathered:
    """The gradients of an op's several outputs, one slot each (None where none arrived); the walk adds two of these
    as it adds any two gradients. Its shape is None, as its op's out_shape, so the walk never unbroadcasts it."""
    shape = None

    def __init__(self, parts):
        self.parts = parts

    def __add__(self, other):
        return Gathered([a if b is None else b if a is None else a + b for a, b in zip(self.parts, other.parts)])

    def grads_for(self, op):
        """One gradient per output of op, as its backward takes them: zeros (a Tensor's under create_graph) for an
        output that got none, or None where op.materialize_grads is False."""
        present = next(p for p in self.parts if p is not None)
        xp = backend.xp_of(backend.array_of(present))
        zero = present._new if isinstance(present, Value) else (lambda z: z)   # (a Tensor under create_graph)
        return tuple(p if p is not None else zero(xp.zeros(*out)) if op.materialize_grads else None
                     for p, out in zip(self.parts, op.outputs))


class Output(Function):
    """Output k of an op with several outputs, as a node of the graph: its gradient goes to slot k of the op's."""

    @staticmethod
    def of(op, k):
        node = Output()
        node.k, node.n, node.parents, node.needs_input_grad = k, len(op.outputs), (op,), (True,)
        node.out_shape, node.out_dtype, node._changes, node.seq = *op.outputs[k], op._changes, next(MADE)
        node.out_counter = op.out_counters[k]
        return node

    def backward(self, g):
        parts = [None] * self.n
        parts[self.k] = g
        return Gathered(parts)


class AccumulateGrad:
    """What next_functions shows for a leaf that requires grad (PyTorch's node that adds into .grad): `variable` is
    the leaf. minitorch's graph holds the leaf itself; this is made on demand, one per leaf while it is held."""
    next_functions = ()
    _made = weakref.WeakValueDictionary()   # id(leaf) -> its AccumulateGrad (which keeps the leaf, so the id alive)

    def __init__(self, variable):
        self.variable = variable

    @classmethod
    def of(cls, leaf):
        node = cls._made.get(id(leaf))
        if node is None:
            node = cls._made[id(leaf)] = cls(leaf)
        return node

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


__all__ = ["Function", "AccumulateGrad", "Output", "Gathered", "Constant", "kernel", "reference_ops", "KERNELS",
           "FREED"]
