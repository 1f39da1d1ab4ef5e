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

Kernels: an op may have faster implementations for a device (GPU kernels made with `backend.fuse`), kept apart in
minitorch/kernels/ and registered with `@kernel(Op, device)`. `apply` picks one here, in one place;
`reference_ops()` turns them off, so that every op runs the code of its own class.

A Function written in PyTorch's form (static `forward(ctx, ...)`, core/ctx_form.py) is recorded by the same `apply`,
as a node of class `<Name>Backward` (CtxNode, below), which `__init_subclass__` makes when the class is defined.
"""
import inspect
import weakref

from .. import backend
from . import anomaly_mode, ctx_form, versions
from .grad_mode import state, using_config
from .value import Value

KERNELS = {}     # (op class, device) -> its kernel class, filled by the @kernel decorators of minitorch/kernels/
REFERENCE = {}   # kernel class -> the op it implements
HAS_KERNELS = set()   # the ops that have a kernel for some device
FRESH = set()    # the ops (and kernels) whose backward says it makes every array it returns (fresh_gradients)


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
    __slots__ = ("out_shape", "out_dtype", "seen")
    requires_grad = False

    def __init__(self, t):
        self.out_shape, self.out_dtype = t.data.shape, t.data.dtype
        self.seen = ((), t._version_counter, t._version_counter.value)   # (for versions.counter_of)


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
        REFERENCE[cls] = op
        HAS_KERNELS.add(op)
        KERNELS[(op, device)] = cls
        return cls
    return register


def fresh_gradients(cls):
    """Class decorator: cls's backward returns only arrays it makes itself, each once (never its g, an array it saved
    or kept, a view of one, or one array twice), so the walk hands a leaf its gradient without looking (backward._owned
    looks, for the other ops). For the ops that feed parameters on every step; tests/engine/test_node.py holds each
    claim on each device the class runs on."""
    FRESH.add(cls)
    return cls


def reference_of(cls):
    """The op a kernel class implements; an op is its own reference."""
    return REFERENCE.get(cls, cls)


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


class GraphView:
    """PyTorch's view of a node (grad_fn), derived from what the node holds and holding nothing itself:
    `next_functions` and `name()`, as the tutorials print them."""

    @property
    def next_functions(self):
        """The graph as PyTorch shows it (grad_fn.next_functions): per input, (its node, which output of it), read
        from `parents`: (None, 0) for an input that needs no gradient, an AccumulateGrad for a leaf."""
        return tuple((None, 0) if p is None or type(p) is Constant else (p.parents[0], p.k) if type(p) is Output
                     else (AccumulateGrad.of(p), 0) if isinstance(p, Value) else (p, 0) for p in self.parents)

    def name(self):
        """PyTorch's name for this node: MulBackward0 (a PyTorch-form Function's node is <Name>Backward already)."""
        name = reference_of(type(self)).__name__
        return name if name.endswith("Backward") else name + "Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class Function(GraphView):
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
      forward keeps it in the tuple `self.kept` for speed (released with `saved_tensors`; under create_graph the engine
      drops it, and backward computes it again from the saved Tensors).

    A recorded op is a node of the graph, as small as DeZero's: `parents` holds, per input, the input's node (the op
    that made it, or the Tensor itself for a leaf) where the input needs a gradient, else a `Constant` for a Tensor
    and None for an array or a number; `saved_tensors` and `kept`; `out_shape` and `out_dtype`, its output's (lists
    of them for several outputs; a leaf Value has them too); `seq`, its place in the order ops were recorded (the
    walk's order); `seen`, what its forward saw, for the in-place check (versions.py owns it); and `_hooks`, the
    hooks (and retain_grad) of its output. A node holds arrays only through `saved_tensors` and `kept`, not its output
    array (a backward that reads it saves it): a graph holds what its backward passes declared, as PyTorch's does.
    A node never changes: an in-place op on a tensor in the graph records a new op, which becomes the tensor's `_op`.
    """

    needs_float = False  # ops whose math needs real numbers (exp, log, ...) refuse integer inputs with a clear message
    saved_tensors = ()   # what save_for_backward declared, read back by backward; FREED once backward released it
    kept = ()            # intermediates forward kept so that backward need not compute them again (speed only)
    seq = None           # when recorded: the version clock's time (versions.CLOCK), the walk's order
    _hooks = None        # register_hook's on the output of this op (and its retain_grad: backward.RETAIN)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(inspect.getattr_static(cls, "forward"), staticmethod):   # PyTorch's form: forward(ctx, ...)
            cls.apply = classmethod(ctx_form.apply)
            cls.node_class = type(f"{cls.__name__}Backward", (CtxNode,), {"fn": cls, "__module__": cls.__module__})

    @classmethod
    def apply(cls, *inputs, **options):
        """Run the op on Tensors (and plain numbers or arrays); record it in the graph if a gradient is needed."""
        inputs = inputs if state.autocast is None else state.autocast.cast_inputs(cls, inputs)   # (mt.autocast)
        first, arrays, needs = _read_inputs(cls, inputs)
        record = state.grad_enabled and True in needs
        op = (KERNELS.get((cls, backend.device_of(first.data)), cls) if cls in HAS_KERNELS and state.kernels else cls)()
        op.needs_input_grad = needs if record else (False,) * len(inputs)
        result = op.forward(*arrays, **options) if not state.op_hook else state.op_hook(op, "forward", arrays, options)
        out = tuple([first._new(r, record) for r in result]) if type(result) is tuple else first._new(result, record)
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
        self.saved_tensors = values


class View(Function):
    """An op whose output may be a view of its first input's memory (reshape, permute, basic indexing): when it is,
    the output shares the input's version counter, so that an in-place change through either is seen by both."""

    @classmethod
    def apply(cls, *inputs, **options):
        out = super().apply(*inputs, **options)
        if versions.same_buffer(out.data, inputs[0].data):
            versions.share(out, inputs[0])
        return out


def _record(op, inputs, arrays, result, out):
    """Make op the graph node of out (or of a tuple: _give_outputs), with what its forward saw (versions.py)."""
    op.parents = tuple([x._op or x if need else Constant(x) if isinstance(x, Value) else None   # (no array held)
                        for x, need in zip(inputs, op.needs_input_grad)])
    op.seq = next(versions.CLOCK)
    if state.anomaly:
        anomaly_mode.record_stack(op)
    if type(out) is tuple:   # (one output in a tuple too: a ctx-form forward may return (y,))
        return _give_outputs(op, arrays, result, out)
    op.out_shape, op.out_dtype, out._op = result.shape, result.dtype, op
    op.seen = (op.saved_tensors and [*map(id, arrays), id(result)], out._version_counter, 0)


def _give_outputs(op, arrays, results, outs):
    """Several outputs: output k's node is an Output that sends its gradient to slot k of op's (Gathered); op's
    backward then takes one gradient per output, zeros for one that got none."""
    op.out_shape, op.out_dtype = [r.shape for r in results], [r.dtype for r in results]
    op.seen = (op.saved_tensors and [*map(id, arrays), *map(id, results)], [t._version_counter for t in outs], 0)
    for k, t in enumerate(outs):
        t._op = Output.of(op, k)


def _carry_cut(out, inputs):
    """Carry the name of a non-differentiable op that cut the graph (argmax, a comparison), for backward's error."""
    cut_by = next((t._cut_by for t in inputs if isinstance(t, Value) and t._cut_by), None)
    for t in out if type(out) is tuple else (out,):
        t._cut_by = cut_by


class Gathered:
    """The gradients of an op's several outputs, one slot each (None where none arrived); the walk adds two of these
    as it adds any two gradients. Its shape is its op's out_shape (the list of its outputs' shapes), so the walk never
    unbroadcasts it."""

    def __init__(self, parts, shape):
        self.parts, self.shape = parts, shape

    def __add__(self, other):
        return Gathered([a if b is None else b if a is None else a + b for a, b in zip(self.parts, other.parts)],
                        self.shape)

    def grads_for(self, op):
        """One gradient per output of op, as its backward takes them: zeros (a Tensor's under create_graph) for an
        output that got none, or None where the op asked for None (a ctx-form's set_materialize_grads(False))."""
        present = next(p for p in self.parts if p is not None)
        xp = backend.xp_of(backend.array_of(present))
        zero = present._new if isinstance(present, Value) else (lambda z: z)   # (a Tensor under create_graph)
        materialize = getattr(op, "materialize_grads", True)
        return tuple(p if p is not None else zero(xp.zeros(shape, dtype)) if materialize else None
                     for p, shape, dtype in zip(self.parts, op.out_shape, op.out_dtype))


class Output(Function):
    """Output k of an op with several outputs, as a node of the graph: its gradient goes to slot k of the op's."""

    @staticmethod
    def of(op, k):
        node = Output()
        node.k, node.n, node.parents, node.needs_input_grad = k, len(op.out_shape), (op,), (True,)
        node.out_shape, node.out_dtype, node.seq = op.out_shape[k], op.out_dtype[k], next(versions.CLOCK)
        node.seen = ((), op.seen[versions.COUNTER][k], 0)
        return node

    def backward(self, g):
        parts = [None] * self.n
        parts[self.k] = g
        return Gathered(parts, self.parents[0].out_shape)


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


class CtxNode(Function):
    """One call of a Function in PyTorch's form (ctx_form.py), as a node of the graph; each such class has its own
    subclass, `<Name>Backward` (its `node_class`)."""
    fn = None   # the class in PyTorch's form
    materialize_grads = True   # several outputs: zeros (not None) for an output that got no gradient

    def forward(self, *arrays, ctx, outputs, single):
        """The outputs forward(ctx, ...) computed, as arrays; what ctx saved, declared as arrays (held by the node)."""
        self.ctx, self.new = ctx, type(outputs[0])._new   # new(array): a Tensor made as the engine makes them
        self.save_for_backward(*[None if t is None else t.data for t in ctx.to_save])
        self.materialize_grads, ctx.to_save = ctx.materialize_grads, ()
        results = tuple(out.data for out in outputs)
        return results[0] if single else results

    def backward(self, *grads):
        """The class's backward(ctx, *grad_outputs) on Tensors; its results as the walk wants them."""
        on_tensors = any(isinstance(g, Value) for g in grads)
        self.ctx._saved = tuple(v if v is None or isinstance(v, Value) else self.new(v) for v in self.saved_tensors)
        try:
            result = self.fn.backward(self.ctx, *[g if g is None or isinstance(g, Value) else self.new(g)
                                                  for g in grads])
        finally:
            self.ctx._saved = None
        result = result if isinstance(result, tuple) else (result,)
        for i, (r, parent) in enumerate(zip(result, self.parents)):
            if r is not None and not isinstance(parent, (Value, Function, Constant)):
                raise RuntimeError(f"function {type(self).__name__} returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was not a Variable")
        return tuple(r if on_tensors else backend.array_of(r) for r in result)


__all__ = ["Function", "View", "Output", "Gathered", "Constant", "CtxNode", "AccumulateGrad", "kernel",
           "fresh_gradients", "reference_of", "reference_ops", "KERNELS", "FRESH", "FREED"]
