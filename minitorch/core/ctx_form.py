"""Functions in PyTorch's form: `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` as static methods on Tensors.

    class Exp(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y
        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

`Function.__init_subclass__` (function.py) gives such a class this module's `apply` (Function.ctx_form_apply). It
runs forward on the Tensors with grad recording off, as PyTorch does, and records one ordinary op in the graph, a
`CtxNode`, whose backward hands the output gradients to the class's backward as Tensors. Under create_graph=True those
gradients, and the tensors ctx saved (the inputs themselves, connected to the graph), record what backward computes,
so a backward written with Tensor ops can be differentiated again. An op with several outputs gives each output a
small `Output` node that sends its gradient to the CtxNode, where they are gathered (`Gathered`) into one gradient
per output.
"""
from .. import backend
from .function import Constant, Function, stand_in
from .grad_mode import no_grad, state
from .value import Value

INPLACE = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
           "the tensor {i} that {name}'s ctx.save_for_backward kept is at version {now}; expected version {then} "
           "instead")


class FunctionCtx:
    """The `ctx` of a Function in PyTorch's form: what forward leaves for backward."""

    def __init__(self, name, needs_input_grad):
        self._name, self.needs_input_grad = name, needs_input_grad
        self.to_save, self._versions, self._non_differentiable, self.materialize_grads = (), (), set(), True

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward, read back as ctx.saved_tensors; in-place changes since are refused."""
        for t in tensors:
            if t is not None and not isinstance(t, Value):
                raise TypeError(f"{self._name}: save_for_backward takes Tensors or None, got {type(t).__name__}; "
                                f"keep other values as attributes of ctx")
        self.to_save = tensors
        self._versions = [None if t is None else t._version_counter.value for t in tensors]

    @property
    def saved_tensors(self):
        """What forward saved, as it was then (PyTorch's error if an in-place op changed one since)."""
        for i, (t, then) in enumerate(zip(self.to_save, self._versions)):
            if t is not None and t._version_counter.value != then:
                raise RuntimeError(INPLACE.format(i=i, name=self._name, now=t._version_counter.value, then=then))
        return self.to_save

    def mark_non_differentiable(self, *tensors):
        """Outputs that carry no gradient (an argmax's indices, a mask)."""
        self._non_differentiable |= {id(t) for t in tensors}

    def set_materialize_grads(self, value):
        """False: backward receives None (not zeros) for an output that got no gradient."""
        self.materialize_grads = bool(value)


def apply(cls, *args, **kwargs):
    """cls.forward(ctx, *args, **kwargs) on Tensors, recorded as one CtxNode when an input needs a gradient."""
    class_name = cls.__name__
    needs = tuple(isinstance(a, Value) and a.requires_grad for a in args)
    ctx = FunctionCtx(class_name, needs)
    with no_grad():
        outputs = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(outputs, tuple)
    outputs = (outputs,) if single else outputs
    for i, out in enumerate(outputs):
        if not isinstance(out, Value):
            raise TypeError(f"{class_name}.forward must return a Tensor or a tuple of Tensors; output {i} is a "
                            f"{type(out).__name__}")
    # an input returned as it is becomes a new Tensor on the same memory: the input keeps its own place in the graph
    outputs = tuple(out._new(out.data) if any(out is a for a in args) else out for out in outputs)
    if not (state.grad_enabled and any(needs)):
        return outputs[0] if single else outputs
    node = CtxNode()
    node.fn, node.ctx, node.needs_input_grad = cls, ctx, needs
    node.parents = tuple(a._op or a if need else stand_in(a) for a, need in zip(args, needs))
    node.outputs = [(out.data.shape, out.data.dtype) for out in outputs]   # zeros for an output without a gradient
    node.xp = backend.xp_of(outputs[0].data)
    node.single, node.new = single, type(outputs[0])._new   # new(array): a Tensor made as the engine makes them
    node.out_shape, node.out_dtype = node.outputs[0] if single else (None, None)   # (several: Gathered, below)
    node.saved = (ctx,)   # (released by the walk, as any op's saved)
    for k, out in enumerate(outputs):
        if id(out) in ctx._non_differentiable:
            continue
        out.requires_grad = True
        out._op = node if single else _output_node(node, k, out)
    return outputs[0] if single else outputs


class Gathered:
    """The gradients of an op's several outputs, one slot each (None where none arrived); the walk adds two of these
    as it adds any two gradients. Its shape is None, like the CtxNode's, so the walk never unbroadcasts it."""
    shape = None

    def __init__(self, parts, n):
        self.parts = parts or [None] * n

    def __add__(self, other):
        return Gathered([a if b is None else b if a is None else a + b for a, b in zip(self.parts, other.parts)],
                        len(self.parts))


class CtxNode(Function):
    """One call of a Function in PyTorch's form, as a node of the graph."""

    def backward(self, g):
        return _backward(self, g)


class Output(Function):
    """Output k of a CtxNode with several outputs: its gradient goes to slot k of the node's."""

    def backward(self, g):
        parts = [None] * self.n
        parts[self.k] = g
        return Gathered(parts, self.n)


def _output_node(node, k, tensor):
    out = Output()
    out.k, out.n, out.parents, out.needs_input_grad = k, len(node.outputs), (node,), (True,)
    out.out_shape, out.out_dtype = tensor.shape, tensor.dtype
    return out


def _backward(node, g):
    """The class's backward(ctx, *grad_outputs) on Tensors; its results as the walk wants them."""
    ctx = node.ctx
    on_tensors = isinstance(g, Value) or (isinstance(g, Gathered) and any(isinstance(p, Value) for p in g.parts))
    grads = []
    for part, (shape, dtype) in zip([g] if node.single else g.parts, node.outputs):
        if part is None and ctx.materialize_grads:   # PyTorch's zeros for an output that got no gradient
            part = node.xp.zeros(shape, dtype)
        grads.append(part if part is None or isinstance(part, Value) else node.new(part))
    result = node.fn.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    name = node.fn.__name__
    if len(result) != len(node.parents):
        raise RuntimeError(f"function {name}Backward returned an incorrect number of gradients (expected "
                           f"{len(node.parents)}, got {len(result)})")
    out = []
    for i, (r, parent) in enumerate(zip(result, node.parents)):
        if r is not None and not isinstance(parent, (Value, Function, Constant)):
            raise RuntimeError(f"function {name}Backward returned a gradient different than None at position "
                               f"{i + 1}, but the corresponding forward input was not a Variable")
        out.append(r if r is None or on_tensors else r.data if isinstance(r, Value) else r)
    return tuple(out)


Function.ctx_form_apply = apply
