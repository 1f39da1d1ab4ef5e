"""Reverse-mode autograd: the graph walk, the gradient it starts with, accumulation into .grad, and unbroadcast.

The graph is made of Functions (function.py): each recorded op lists its inputs' graph nodes in `parents`, an op for
a computed input and the Tensor itself for a leaf. `run_backward` visits the nodes from the output back to the
leaves in topological order (each node after every node that uses it), calls each op's backward with the gradient of
its output, sums the gradients that reach a node from several uses, undoes broadcasting in one place (`unbroadcast`),
and adds what reaches a leaf to its .grad.

Higher order (create_graph=True): the walk hands each backward Tensors instead of arrays (higher_order.py), so the
same formulas record a graph that can be differentiated again.
"""
import operator

from .. import backend
from . import anomaly_mode, versions
from .function import FREED, FRESH, Function, Gathered
from .grad_mode import state
from .higher_order import backward_recorded
from .value import Value

_made = operator.attrgetter("seq")   # a graph node's place in the order the nodes were made

RELEASED = ("trying to backward through a graph a second time: its saved arrays were released after the first "
            "backward; call backward(retain_graph=True) the first time")

def unbroadcast(grad, shape, op=None):
    """Sum `grad` (an array, or a Tensor under create_graph) over the axes that broadcasting added or stretched, so
    that it has `shape`; a gradient that `shape` does not broadcast to (a transposed one, say) is refused, naming op,
    as PyTorch refuses it (never reshaped into place)."""
    extra = grad.ndim - len(shape)
    if extra < 0 or any(n != 1 and n != m for n, m in zip(shape, grad.shape[extra:])):
        raise RuntimeError(f"Function {type(op).__name__ if op is not None else ''}.backward returned an invalid "
                           f"gradient - got {list(grad.shape)} but expected shape compatible with {list(shape)}")
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        grad = grad.sum(dim=axes, keepdim=True) if isinstance(grad, Value) else grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def initial_grad(t, grad, create_graph, who="backward()", hint="backward(grad)"):
    """The gradient that starts a backward from t: an array (a Tensor under create_graph) shaped like t."""
    if not isinstance(t, Value) or not t.requires_grad or (grad is None and t.data.size != 1):
        _refuse_start(t, who, hint)
    g = grad.data if isinstance(grad, Value) and not create_graph else grad
    if not isinstance(g, Value) and (type(g) is not type(t.data) or g.dtype != t.data.dtype):   # None: dy/dy = 1
        xp = backend.xp_of(t.data)
        g = xp.ones_like(t.data) if grad is None else xp.asarray(g, dtype=t.data.dtype)
    if tuple(g.shape) != t.data.shape:
        raise ValueError(f"{who}: the gradient has shape {tuple(g.shape)} but the tensor has shape {t.data.shape}")
    return t._new(g) if create_graph and not isinstance(g, Value) else g


def _refuse_start(t, who, hint):
    if not isinstance(t, Value):
        raise TypeError(f"{who}: expected a Tensor, got {type(t).__name__}")
    if t._cut_by and not t.requires_grad:
        raise RuntimeError(f"{who}: no gradient can flow back from this tensor: it was computed through "
                           f"{t._cut_by}, whose result carries no gradient (not differentiable)")
    if not t.requires_grad:
        raise RuntimeError(f"{who} on a tensor that does not require grad (no input had requires_grad=True, "
                           f"or it was computed under no_grad())")
    raise RuntimeError(f"{who} without a gradient needs a scalar; this tensor has shape {tuple(t.data.shape)}: "
                       f"pass {hint} with a gradient of that shape")


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None):
    """Propagate root_grads (initial_grad's) from the root Tensors back to each leaf's .grad (and retain_grad()'s);
    with `inputs` (mt.grad), return their gradients instead (None where unreachable) and leave .grad alone."""
    grads = {}   # graph node -> the sum of the gradients that reached it so far (a leaf's: an array the walk owns)
    for root, g in zip(roots, root_grads):
        node = root._op or root
        grads[node] = grads[node] + g if node in grads else g if root._op or create_graph else g.copy()
    found = dict.fromkeys(x._op or x for x in inputs or ())
    order = _topological_order(list(grads), None if inputs is None else found)
    previous, state.grad_enabled = state.grad_enabled, create_graph   # as PyTorch: a backward records only then
    try:
        for node in order:
            g = grads.pop(node, None)
            if g is not None and node._hooks:
                g = _run_hooks(node, g, roots[0]._new, inputs is None, create_graph)
            if g is None:
                continue
            if node in found:   # one of mt.grad's inputs
                found[node] = g
            if isinstance(node, Function):
                _backward(node, g, grads, retain_graph, create_graph, roots[0]._new)
            elif inputs is None:   # a leaf
                _accumulate(node, g, create_graph)
    finally:
        state.grad_enabled = previous
    return None if inputs is None else [found[x._op or x] for x in inputs]


def _backward(op, g, grads, retain_graph, create_graph, new):
    """Call op's backward with g (its output's gradient; its outputs': Gathered), add what it returns to parents'."""
    if op.saved_tensors is FREED or op.seq < versions.last_change:   # released, or something changed in place since
        _check_saved(op)
    g_out = g.grads_for(op) if type(g) is Gathered else (g,)   # (one per output)
    g_in = (backward_recorded(op, g_out, new) if create_graph else
            op.backward(*g_out) if not state.op_hook else state.op_hook(op, "backward", g_out, {}))
    g_in = g_in if type(g_in) is tuple else (g_in,)   # (one input: one gradient)
    if len(g_in) != len(op.parents) or state.anomaly:
        _check(op, g_in)
    for parent, pg, needs_grad in zip(op.parents, g_in, op.needs_input_grad):
        if pg is not None and needs_grad:
            if pg.shape != parent.out_shape:  # broadcasting is undone here, for every op (a sum: new memory)
                pg = unbroadcast(pg, parent.out_shape, op)
            elif parent.seq < 0 and not (create_graph or parent in grads or type(op) in FRESH   # a leaf's first
                                         or _owned(pg, op, g_out, g_in)):
                pg = pg.copy()   # gradient becomes its .grad (seq -1): not memory that something else holds
            grads[parent] = grads[parent] + pg if parent in grads else pg
    if not retain_graph:   # release what backward read, and the graph above it
        op.saved_tensors, op.parents, op.kept = FREED, (), ()


def _check_saved(op):
    """Raise if op's saved arrays were released by an earlier backward, or one of them was changed in place since
    op's forward (versions.check)."""
    if op.saved_tensors is FREED:
        raise RuntimeError(RELEASED)
    versions.check(op)


def _check(op, input_grads):
    """Raise PyTorch's error unless op's gradients are one per input; in anomaly mode, if one holds nan or inf."""
    if len(input_grads) != len(op.parents):
        raise RuntimeError(f"function {type(op).__name__}.backward returned an incorrect number of gradients "
                           f"(expected {len(op.parents)}, got {len(input_grads)})")
    anomaly_mode.check_gradients(op, input_grads)


def _topological_order(roots, targets=None):
    """Graph nodes reachable from the roots, each after every node that uses it: an op is made after the ops of its
    inputs, so the latest made comes first (its `seq`; a leaf's is -1); with targets (mt.grad): _leading_to."""
    reached, stack = set(roots), list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, Function):   # (a loop: a generator here costs a call per node)
            for parent, need in zip(node.parents, node.needs_input_grad):
                if need and parent not in reached:
                    reached.add(parent)
                    stack.append(parent)
    order = sorted(reached, key=_made, reverse=targets is None)   # (iterative: no recursion limit)
    return order if targets is None else _leading_to(order, targets)


def _leading_to(order, targets):
    """The nodes of `order` (parents first) from which some target can be reached, roots first, and released ones (to
    report them)."""
    needed = set(targets)
    for node in order:
        if isinstance(node, Function) and (node.saved_tensors is FREED or any(
                need and p in needed for p, need in zip(node.parents, node.needs_input_grad))):
            needed.add(node)
    return [node for node in reversed(order) if node in needed]


def _owned(g, op, g_out, g_in):
    """True when g (one of g_in, op's backward's) may be a leaf's .grad as it is: an array of its own (a view is copied)
    held once, as one of g_in: not also in g_out (the gradients op received), what op saved or kept, or another g_in."""
    held = 0
    for h in (*g_out, *op.saved_tensors, *op.kept, *g_in):   # (identity alone: a plain loop is the cheapest)
        held += h is g
    return held == 1 and g.base is None


def _accumulate(t, g, create_graph, owned=True):
    """Add g to t.grad; a first gradient the walk owns (a leaf's: _owned, or a copy) is kept as is (AccumulateGrad)."""
    if t.grad is not None or create_graph:
        return _add_to_grad(t, g, create_graph)
    t.grad = t._new(g if owned and g.dtype == t.data.dtype else g.astype(t.data.dtype, copy=True))


def _add_to_grad(t, g, create_graph):
    if create_graph:   # a copy in the leaf's dtype, recorded so that it can be differentiated
        g = g.clone() if g.dtype == t.dtype else g.to(dtype=t.dtype)
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad.requires_grad:  # left by a create_graph backward: its array belongs to a graph, so no +=
        t.grad = t._new(t.grad.data + g)
    else:  # (after FlatParameters.settle(), a parameter's .grad is a view of the flat buffer: this writes there)
        t.grad.data += g


RETAIN = "retain_grad"   # the key of a non-leaf's retain_grad() in its node's _hooks: the Tensor that keeps .grad


def _run_hooks(node, g, new, keep, create_graph):
    """g after the hooks of node (Tensor.register_hook): each sees the gradient as a Tensor and may return a new one,
    and may keep what it saw, so a leaf takes a copy. Then, if keep (a backward, not mt.grad), a non-leaf's
    retain_grad() Tensor gets it."""
    for key, hook in list(node._hooks.items()):
        new_g = None if key == RETAIN else hook(g if isinstance(g, Value) else new(g))
        if new_g is None:
            continue
        if not isinstance(new_g, Value) or new_g.data.shape != node.out_shape:
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned "
                               f"{getattr(new_g, 'shape', type(new_g).__name__)} for a gradient of shape "
                               f"{tuple(node.out_shape)}: a hook returns None or a Tensor of the gradient's shape")
        g = new_g if isinstance(g, Value) else new_g.data
    if not isinstance(node, Function) and not isinstance(g, Value) and set(node._hooks) - {RETAIN}:
        g = g.copy()
    if keep and RETAIN in node._hooks:
        _accumulate(node._hooks[RETAIN], g, create_graph, owned=False)
    return g


__all__ = ["unbroadcast", "initial_grad", "run_backward"]
