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
runs forward on the Tensors with grad recording off, as PyTorch does, and then records the call through
`Function.apply`, the one recording path of every op: as a node of class `<Name>Backward` (PyTorch's name for it)
whose forward hands back the arrays of the outputs already computed and declares the arrays of what ctx saved. So the
walk's checks are the class form's: one in-place check (versions.py), one count of gradients (backward.py), and
several outputs as any op's (Output, Gathered: function.py). Its backward hands the output gradients and the saved
tensors to the class's backward as Tensors; under create_graph=True they are the graph's Tensors (higher_order.py),
so a backward written with Tensor ops can be differentiated again.
"""
from .. import backend
from .function import Constant, Function
from .grad_mode import no_grad, state
from .value import Value


class FunctionCtx:
    """The `ctx` of a Function in PyTorch's form: what forward leaves for backward."""

    def __init__(self, name, needs_input_grad):
        self._name, self.needs_input_grad = name, needs_input_grad
        self.to_save, self._non_differentiable, self.materialize_grads, self._saved = (), set(), True, None

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward, read back as ctx.saved_tensors; in-place changes since are refused."""
        for t in tensors:
            if t is not None and not isinstance(t, Value):
                raise TypeError(f"{self._name}: save_for_backward takes Tensors or None, got {type(t).__name__}; "
                                f"keep other values as attributes of ctx")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        """What forward saved, as Tensors (in backward: on the node's saved arrays, whose versions the walk checked)."""
        return self.to_save if self._saved is None else self._saved

    def mark_non_differentiable(self, *tensors):
        """Outputs that carry no gradient (an argmax's indices, a mask)."""
        self._non_differentiable |= {id(t) for t in tensors}

    def set_materialize_grads(self, value):
        """False: backward receives None (not zeros) for an output that got no gradient."""
        self.materialize_grads = bool(value)


def apply(cls, *args, **kwargs):
    """cls.forward(ctx, *args, **kwargs) on Tensors, recorded by Function.apply when an input needs a gradient."""
    needs = tuple(isinstance(a, Value) and a.requires_grad for a in args)
    ctx = FunctionCtx(cls.__name__, needs)
    with no_grad():
        outputs = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(outputs, tuple)
    outputs = (outputs,) if single else outputs
    for i, out in enumerate(outputs):
        if not isinstance(out, Value):
            raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple of Tensors; output {i} is a "
                            f"{type(out).__name__}")
    if state.grad_enabled and any(needs):
        recorded = _node_class(cls).apply(*args, ctx=ctx, outputs=outputs, single=single)
        recorded = (recorded,) if single else recorded
        for out, mine in zip(outputs, recorded):
            if id(out) in ctx._non_differentiable:
                mine.requires_grad, mine._op = False, None
        outputs = recorded
    else:   # an input returned as it is becomes a new Tensor on the same memory: the input keeps its own place
        outputs = tuple(out._new(out.data) if any(out is a for a in args) else out for out in outputs)
    return outputs[0] if single else outputs


def _node_class(cls):
    """The class of cls's graph nodes, `<Name>Backward` (made once per class)."""
    if "_ctx_node" not in cls.__dict__:
        cls._ctx_node = type(f"{cls.__name__}Backward", (CtxNode,), {"fn": cls, "__module__": cls.__module__})
    return cls._ctx_node


class CtxNode(Function):
    """One call of a Function in PyTorch's form, as a node of the graph."""
    fn = None   # the class in PyTorch's form

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
        self.ctx._saved = tuple(v if v is None or isinstance(v, Value) else self.new(v) for v in self.saved)
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


Function.ctx_form_apply = apply
