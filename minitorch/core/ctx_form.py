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

`Function.__init_subclass__` (function.py, which imports this module) gives such a class this module's `apply`,
whatever was imported before. It runs forward on the Tensors with grad recording off, as PyTorch does, and then
records the call through `Function.apply`, the one recording path of every op: as a node of the class's
`node_class`, `<Name>Backward` (PyTorch's name for it; function.CtxNode), whose forward hands back the arrays of the
outputs already computed and declares the arrays of what ctx saved. So the
walk's checks are the class form's: one in-place check (versions.py), one count of gradients (backward.py), and
several outputs as any op's (Output, Gathered: function.py). Its backward hands the output gradients and the saved
tensors to the class's backward as Tensors; under create_graph=True they are the graph's Tensors (higher_order.py),
so a backward written with Tensor ops can be differentiated again.
"""
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
        recorded = cls.node_class.apply(*args, ctx=ctx, outputs=outputs, single=single)
        recorded = (recorded,) if single else recorded
        for out, mine in zip(outputs, recorded):
            if id(out) in ctx._non_differentiable:
                mine.requires_grad, mine._op = False, None
        outputs = recorded
    else:   # an input returned as it is becomes a new Tensor on the same memory: the input keeps its own place
        outputs = tuple(out._new(out.data) if any(out is a for a in args) else out for out in outputs)
    return outputs[0] if single else outputs
