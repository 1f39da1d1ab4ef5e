"""Reverse-mode autograd: the Function base class, the graph walk, and unbroadcast.

Every differentiable op is a subclass of `Function` with two methods that sit side by side:

    forward(self, *arrays, **options) -> array      computes the value and saves on `self` what backward needs
    backward(self, grad) -> one gradient per input   local derivative times the incoming gradient (None = no grad)

Gradients returned by `backward` may have the broadcast shape of the output; `run_backward` sums them back to each
input's shape with `unbroadcast`, the one place where broadcasting is undone.

Higher order (create_graph=True): the walk hands each backward Tensors instead of arrays, on a copy of the op whose
saved inputs and output are the graph's Tensors, so the same formulas record a graph that can be differentiated
again. Backward passes therefore use operators and the array-or-Tensor helpers of `array_ops.py`. A fused op
(one that defines `composed`) is differentiated through its composed form instead (docs/backprop.md, "Second order").
"""
import copy

import numpy as np

from .. import backend
from . import anomaly_mode, versions
from .grad_mode import enable_grad, state

# minitorch.tensor.Tensor, which the engine makes and recognises: set by tensor.py as it defines the class (tensor.py
# imports this module, and ops/ import it too, so this one imports neither)
Tensor = None

RELEASED = ("trying to backward through a graph a second time: its saved arrays were released after the first "
            "backward; call backward(retain_graph=True) the first time")


def unbroadcast(grad, shape):
    """Sum `grad` (an array, or a Tensor under create_graph) over the axes that broadcasting added or stretched, so
    that it has `shape`."""
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        on_arrays = backend.is_array(grad) or isinstance(grad, np.generic)
        grad = grad.sum(axis=axes, keepdims=True) if on_arrays else grad.sum(dim=axes, keepdim=True)
    return grad.reshape(shape)


class Function:
    """One differentiable op. Subclasses define forward and backward; users call `apply`.

    The contract an op relies on:
    - `forward(self, *arrays, **options)` gets arrays (and the options, by keyword) and saves on `self` what backward
      needs; `apply` sets `self.needs_input_grad` (one bool per input, all False when no gradient is wanted) before it.
    - `backward(self, g)` returns one gradient per input (None where there is none), possibly in the broadcast shape
      of the output: the engine undoes broadcasting.
    - `self.retain_graph`, set by the engine just before backward: False when no second backward will run through
      this op (backward(retain_graph=False), the default), so backward may write its result into an array it saved
      (`fused/rows.grad_buffer`) instead of allocating one; True otherwise, and then saved arrays must stay intact.
    """

    # Ops whose math needs real numbers (exp, log, ...) refuse integer inputs with a clear message.
    needs_float = False
    # run_backward sets this just before backward; False means no backward will follow (retain_graph=False), so
    # backward may write its gradient into the arrays it saved instead of allocating new ones.
    retain_graph = True
    # Saved float arrays that are neither an input nor the output but depend on the inputs only piecewise-constantly
    # (a sign, the share of a tie): create_graph=True treats them as constants, their derivative being 0.
    constants = ()
    # True for an op whose output may be a view of its first input's memory (reshape, permute, basic indexing): the
    # output then shares the input's version counter, so that an in-place change through either is seen by both
    is_view = False

    @classmethod
    def apply(cls, *inputs, **options):
        """Run the op on Tensors (and plain arrays or numbers); record it in the graph if a gradient is needed."""
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
        op = cls()
        grad_enabled = state.grad_enabled
        requires_grad = grad_enabled and any(t.requires_grad for t in tensors)
        # set even without a graph, so that forward may read it to save only what backward will need
        op.needs_input_grad = tuple(requires_grad and isinstance(x, Tensor) and x.requires_grad for x in inputs)
        arrays = [x.data if isinstance(x, Tensor) else x for x in inputs]
        hook = state.op_hook
        result = op.forward(*arrays, **options) if hook is None else hook(op, "forward", arrays, options)
        out = Tensor._make(result, requires_grad=requires_grad)
        if cls.is_view and versions.same_buffer(result, arrays[0]):
            out._version_counter = tensors[0]._version_counter
        if requires_grad:
            op.parents = inputs
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

    def recompute(self, *inputs):
        """create_graph=True: rebuild from the input Tensors any other saved array that depends on them, so that it
        is differentiated too. Ops that save such arrays (e.g. Gelu's tanh) override this; the output is handled."""


class _Freed:
    """Stands in for a Function whose saved arrays were released by backward (retain_graph=False)."""
    parents = ()


FREED = _Freed()


def _topological_order(roots):
    """Nodes reachable from the roots, each after every node that uses it (iterative: no recursion limit)."""
    order, visited = [], set()
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        if node._op is not None:
            for parent in node._op.parents:
                if isinstance(parent, Tensor) and parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    return order[::-1]  # roots first


def _leading_to(order, targets):
    """The nodes of `order` from which some target can be reached (the rest need no backward for mt.grad), and those
    whose graph was released (so that the walk reports it)."""
    needed = {id(t) for t in targets}
    for node in reversed(order):  # parents before the nodes that use them
        if id(node) not in needed and node._op is not None and (node._op is FREED or any(
                isinstance(p, Tensor) and id(p) in needed for p in node._op.parents)):
            needed.add(id(node))
    return [node for node in order if id(node) in needed]


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None):
    """Propagate root_grads (arrays shaped like the roots; Tensors under create_graph) back through the graph.

    Without `inputs`, accumulate into the .grad of every leaf reachable from the roots (and of tensors that asked
    with retain_grad). With `inputs` (mt.grad), return their gradients in order (None where unreachable) and leave
    .grad alone.
    """
    if create_graph:  # the backward passes record ops, whatever the caller's grad mode
        with enable_grad():
            return _walk(roots, root_grads, retain_graph, True, inputs)
    return _walk(roots, root_grads, retain_graph, False, inputs)


def _walk(roots, root_grads, retain_graph, create_graph, inputs):
    grads = {}
    for root, g in zip(roots, root_grads):
        grads[id(root)] = g if id(root) not in grads else grads[id(root)] + g
    order = _topological_order(roots)
    found = None
    if inputs is not None:
        order, found = _leading_to(order, inputs), {id(x): None for x in inputs}
    for node in order:
        g = grads.pop(id(node), None)
        if g is None:
            continue
        if node._hooks:
            g = _run_hooks(node, g)
        op = node._op
        if found is not None:
            if id(node) in found:
                found[id(node)] = g
        elif op is None or node._retains_grad:  # a leaf (or a non-leaf that asked to keep its gradient)
            _accumulate(node, g, create_graph)
        if op is None:
            continue
        if op is FREED:
            raise RuntimeError(RELEASED)
        parents = [p for p in op.parents if isinstance(p, Tensor)]
        if op._saved_versions != versions.record(parents, node):
            versions.check(op, parents, node)
        op.retain_graph = retain_graph
        if create_graph:
            input_grads = _backward_recorded(op, node, g)
        else:
            hook = state.op_hook
            input_grads = op.backward(g) if hook is None else hook(op, "backward", (g,), {})
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        if state.anomaly:
            anomaly_mode.check_gradients(op, input_grads)
        for parent, pg in zip(op.parents, input_grads):
            if pg is None or not isinstance(parent, Tensor) or not parent.requires_grad:
                continue
            pg = unbroadcast(pg, parent.shape)
            key = id(parent)
            grads[key] = pg if key not in grads else grads[key] + pg
        if not retain_graph:
            node._op = FREED
    return None if found is None else [found[id(x)] for x in inputs]


def _accumulate(node, g, create_graph):
    """Add g to node.grad: in place on the fast path; as a new Tensor in the graph under create_graph."""
    if create_graph:
        # a copy in the leaf's dtype, as below, but recorded so that it can be differentiated
        g = g.clone() if g.dtype == node.dtype else g.to(dtype=node.dtype)
        node.grad = g if node.grad is None else node.grad + g
    elif node.grad is None:
        # own the array: g may be shared with another node (Add returns the same g to both sides); a flat Parameter
        # copies it into its slot of the flat gradient buffer instead (nn/utils/flat.py)
        node.grad = Tensor._make(g if getattr(node, "_flat", None) else g.astype(node.dtype, copy=True))
    elif node.grad.requires_grad:  # left by a create_graph backward: its array belongs to a graph, so no +=
        node.grad = Tensor._make(node.grad.data + g)
    else:
        node.grad.data += g


def _backward_recorded(op, node, g):
    """op's gradients as Tensors recorded in the graph (create_graph=True). g is a Tensor; node is op's output."""
    name = type(op).__name__
    if getattr(op, "composed", None) is not None:  # a fused op: differentiate the same op built from primitives
        targets = [p for p in op.parents if isinstance(p, Tensor) and p.requires_grad]
        out = op.composed(*op.parents)
        found = iter(_walk([out], [g], True, True, targets))
        return tuple(next(found) if isinstance(p, Tensor) and p.requires_grad else None for p in op.parents)
    # a copy of op whose saved inputs and output are the graph's Tensors instead of their arrays
    twin = copy.copy(op)
    tensors = {id(node.data): node}
    tensors.update((id(p.data), p) for p in op.parents if isinstance(p, Tensor))
    for attr, value in vars(op).items():
        if id(value) in tensors:  # an array, or a NumPy scalar (a 0-d result)
            setattr(twin, attr, tensors[id(value)])
    twin.recompute(*op.parents)
    for attr, value in vars(twin).items():
        if attr == "parents" or attr in op.constants:
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if (backend.is_array(item) or isinstance(item, np.generic)) and item.dtype.kind in "fc":
                raise RuntimeError(f"{name}: create_graph=True cannot differentiate its backward: it saved "
                                   f"`{attr}`, an array computed from its inputs; rebuild it from the input Tensors in "
                                   f"{name}.recompute, or list it in {name}.constants if its derivative is 0")
    hint = ("to be differentiated twice, a backward is written with operators, Tensor methods and "
            "minitorch.autograd.array_ops (exp, log, sigmoid, tanh, erf, where, ...), which take an array or a Tensor, "
            "not NumPy functions; or the op has a `composed` form (CONTRIBUTING.md)")
    try:
        input_grads = twin.backward(g)
    except Exception as e:  # e.g. a NumPy function handed a Tensor
        raise RuntimeError(f"{name}: create_graph=True: its backward failed on Tensors ({type(e).__name__}: {e}); "
                           f"{hint}") from e
    for pg in input_grads if isinstance(input_grads, tuple) else (input_grads,):
        if backend.is_array(pg) or isinstance(pg, np.generic):
            raise RuntimeError(f"{name}: create_graph=True: its backward returned an array, which would cut the "
                               f"gradient from the graph; {hint}")
    return input_grads


def grad(outputs, inputs, grad_outputs=None, *, create_graph=False, retain_graph=None, allow_unused=False):
    """d(outputs)/d(inputs) as a tuple of Tensors shaped like `inputs` (torch.autograd.grad); .grad is not touched.

    outputs: a Tensor or a sequence; grad_outputs: the gradient for each output (None: 1 for a scalar output).
    create_graph=True records the computation, so the result can be differentiated again; retain_graph defaults to
    create_graph. allow_unused=True gives None for an input that the outputs do not depend on.
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single_input = isinstance(inputs, Tensor)
    inputs = [inputs] if single_input else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor) or backend.is_array(grad_outputs):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad(): {len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise RuntimeError(f"grad(): inputs[{i}] is not a Tensor that requires grad")
    roots = [(o, initial_grad(o, g, create_graph, f"grad(): outputs[{i}]", "grad_outputs"))
             for i, (o, g) in enumerate(zip(outputs, grad_outputs))]
    retain_graph = create_graph if retain_graph is None else retain_graph
    found = run_backward([o for o, _ in roots], [g for _, g in roots], retain_graph, create_graph, inputs)
    result = []
    for i, (x, g) in enumerate(zip(inputs, found)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad(): inputs[{i}] (shape {x.shape}) was not used to compute the outputs; "
                                   f"pass allow_unused=True to get None for it")
        elif create_graph:
            g = g if g.dtype == x.dtype else g.to(dtype=x.dtype)
        else:
            g = Tensor._make(g.astype(x.dtype, copy=True))  # own the array: gradients may share one
        result.append(g)
    return tuple(result)


def initial_grad(t, grad, create_graph, who="backward()", hint="backward(grad)"):
    """The gradient that starts a backward from t: an array (a Tensor under create_graph) shaped like t."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{who}: expected a Tensor, got {type(t).__name__}")
    if not t.requires_grad:
        if t._cut_by:
            raise RuntimeError(f"{who}: no gradient can flow back from this tensor: it was computed through "
                               f"{t._cut_by}, whose result carries no gradient (not differentiable)")
        raise RuntimeError(f"{who} on a tensor that does not require grad (no input had requires_grad=True, "
                           f"or it was computed under no_grad())")
    if grad is None:
        if t.size != 1:
            raise RuntimeError(f"{who} without a gradient needs a scalar; this tensor has shape {t.shape}: "
                               f"pass {hint} with a gradient of that shape")
        g = backend.xp_of(t.data).ones_like(t.data)
    elif isinstance(grad, Tensor):
        g = grad if create_graph else grad.data
    else:
        g = backend.xp_of(t.data).asarray(grad, dtype=t.dtype)
    if tuple(g.shape) != t.shape:
        raise ValueError(f"{who}: the gradient has shape {tuple(g.shape)} but the tensor has shape {t.shape}")
    return Tensor._make(g) if create_graph and backend.is_array(g) else g


def _run_hooks(node, g):
    """g after node's hooks (Tensor.register_hook): each sees the gradient as a Tensor and may return a new one."""
    for hook in list(node._hooks.values()):
        seen = g if isinstance(g, Tensor) else Tensor._make(g)
        new = hook(seen)
        if new is None:
            continue
        if not isinstance(new, Tensor) or new.shape != node.shape:
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned "
                               f"{getattr(new, 'shape', type(new).__name__)} for a gradient of shape {node.shape}: "
                               f"a hook returns None or a Tensor of the gradient's shape")
        g = new if isinstance(g, Tensor) else new.data
    return g


__all__ = ["Function", "unbroadcast", "run_backward", "grad", "initial_grad"]
