"""Reverse-mode autograd: the Function base class, the graph walk, and unbroadcast.

Every differentiable op is a subclass of `Function` with two methods that sit side by side:

    forward(self, *arrays, **options) -> array      computes the value and saves on `self` what backward needs
    backward(self, grad) -> one gradient per input   local derivative times the incoming gradient (None = no grad)

Gradients returned by `backward` may have the broadcast shape of the output; `run_backward` sums them back to each
input's shape with `unbroadcast`, the one place where broadcasting is undone.
"""
import contextlib
import threading

from . import backend

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "grad_enabled", True)


@contextlib.contextmanager
def no_grad():
    """Inside this block ops record no graph (inference, optimizer updates)."""
    previous = is_grad_enabled()
    _state.grad_enabled = False
    try:
        yield
    finally:
        _state.grad_enabled = previous


@contextlib.contextmanager
def enable_grad():
    previous = is_grad_enabled()
    _state.grad_enabled = True
    try:
        yield
    finally:
        _state.grad_enabled = previous


def unbroadcast(grad, shape):
    """Sum `grad` over the axes that broadcasting added or stretched, so that it has `shape`."""
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


class Function:
    """One differentiable op. Subclasses define forward and backward; users call `apply`."""

    # Ops whose math needs real numbers (exp, log, ...) refuse integer inputs with a clear message.
    needs_float = False
    # run_backward sets this just before backward; False means no backward will follow (retain_graph=False), so
    # backward may write its gradient into the arrays it saved instead of allocating new ones.
    retain_graph = True

    @classmethod
    def apply(cls, *inputs, **options):
        """Run the op on Tensors (and plain arrays or numbers); record it in the graph if a gradient is needed."""
        from .tensor import Tensor  # tensor imports autograd; import here to avoid a cycle

        tensors = [x for x in inputs if isinstance(x, Tensor)]
        device = tensors[0].device if tensors else "cpu"
        for t in tensors[1:]:
            if t.device != device:
                raise RuntimeError(f"{cls.__name__}: tensors on different devices ({device} and {t.device}); "
                                   f"move them with .to(device) first")
        if cls.needs_float:
            for t in tensors:
                if t.dtype.kind not in "fc":
                    raise TypeError(f"{cls.__name__} needs a floating-point tensor, got dtype {t.dtype}; "
                                    f"convert with .float() or .double()")
        ctx = cls()
        requires_grad = is_grad_enabled() and any(t.requires_grad for t in tensors)
        if requires_grad:
            ctx.needs_input_grad = tuple(isinstance(x, Tensor) and x.requires_grad for x in inputs)
        arrays = [x.data if isinstance(x, Tensor) else x for x in inputs]
        out = Tensor._make(ctx.forward(*arrays, **options), requires_grad=requires_grad)
        if requires_grad:
            ctx.parents = inputs
            out._ctx = ctx
        elif is_grad_enabled():  # carry the name of a non-differentiable op that cut the graph, for backward's error
            out._cut_by = next((t._cut_by for t in tensors if t._cut_by), None)
        return out

    def forward(self, *arrays, **options):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError


class _Freed(Function):
    """Stands in for a Function whose saved arrays were released by backward (retain_graph=False)."""
    parents = ()

    def backward(self, grad):
        raise RuntimeError("trying to backward through a graph a second time: its saved arrays were released "
                           "after the first backward; call backward(retain_graph=True) the first time")


FREED = _Freed()


def _topological_order(root):
    """Nodes reachable from root, each after every node that uses it (iterative: no recursion limit)."""
    from .tensor import Tensor
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        if node._ctx is not None:
            for parent in node._ctx.parents:
                if isinstance(parent, Tensor) and parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    return reversed(order)  # root first


def run_backward(root, grad, retain_graph=False):
    """Propagate `grad` (an array shaped like root) to every leaf reachable from root, accumulating into .grad."""
    from .tensor import Tensor
    grads = {id(root): grad}
    for node in _topological_order(root):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        ctx = node._ctx
        if ctx is None or node._retains_grad:  # a leaf (or a non-leaf that asked to keep its gradient)
            if node.grad is None:
                # own the array: g may be shared with another node (Add returns the same g to both sides)
                node.grad = Tensor._make(g.astype(node.dtype, copy=True))
            else:
                node.grad.data += g
            if ctx is None:
                continue
        if ctx is FREED:
            FREED.backward(g)
        ctx.retain_graph = retain_graph
        input_grads = ctx.backward(g)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for parent, pg in zip(ctx.parents, input_grads):
            if pg is None or not isinstance(parent, Tensor) or not parent.requires_grad:
                continue
            pg = unbroadcast(pg, parent.shape)
            key = id(parent)
            grads[key] = pg if key not in grads else grads[key] + pg
        if not retain_graph:
            node._ctx = FREED
    return None


__all__ = ["Function", "no_grad", "enable_grad", "is_grad_enabled", "unbroadcast", "run_backward", "backend"]
