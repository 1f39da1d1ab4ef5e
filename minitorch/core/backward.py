"""Reverse-mode autograd: the graph walk and unbroadcast (grad.py builds grad() on them).

`run_backward` visits the graph from the output back to the leaves in topological order (each node after every node
that uses it), calls each op's backward with the gradient of its output, sums the gradients that reach a node from
several uses, and undoes broadcasting in one place (`unbroadcast`).

Higher order (create_graph=True): the walk hands each backward Tensors instead of arrays (higher_order.py), so the
same formulas record a graph that can be differentiated again.
"""
import numpy as np

from .. import backend
from . import anomaly_mode, versions
from .higher_order import backward_recorded
from .node import Node, as_of
from .grad_mode import enable_grad, refuse_shape, state

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


class _Freed:
    """Stands in for a Function whose saved arrays were released by backward (retain_graph=False)."""
    parents = ()


FREED = _Freed()


def _topological_order(roots):
    """Nodes reachable from the roots, each after every node that uses it (iterative: no recursion limit). Nodes are
    dict and set keys by identity (Node's hash is object's)."""
    order, visited = [], set()
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        op = node._op
        if op is not None and op is not FREED:
            for parent, needs_grad in zip(op.parents, op.needs_input_grad):   # (as apply saw them: Tensors that
                if needs_grad:                                               # required grad)
                    if parent._earlier:   # changed in place since: the value op read is at an earlier node
                        parent = as_of(parent, op.seq)
                    if parent not in visited:
                        stack.append((parent, False))
    return order[::-1]  # roots first


def _leading_to(order, targets):
    """The nodes of `order` from which some target can be reached (the rest need no backward for mt.grad), and those
    whose graph was released (so that the walk reports it)."""
    needed = set(targets)
    for node in reversed(order):  # parents before the nodes that use them
        op = node._op
        if node not in needed and op is not None and (op is FREED or any(
                isinstance(p, Node) and (as_of(p, op.seq) if p._earlier else p) in needed for p in op.parents)):
            needed.add(node)
    return [node for node in order if node in needed]


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
    grads = {}   # node -> the sum of the gradients that reached it so far
    # nodes whose pending gradient is not an array of their own, so a leaf among them copies it rather than keep it:
    # the caller's (the roots'), an op's incoming g passed on, a view, one array returned for two inputs
    borrowed = set(roots)
    for root, g in zip(roots, root_grads):
        grads[root] = g if root not in grads else grads[root] + g
    order = _topological_order(roots)
    found = None
    if inputs is not None:
        order, found = _leading_to(order, inputs), dict.fromkeys(inputs)
    hook = state.op_hook
    for node in order:
        g = grads.pop(node, None)
        if g is None:
            continue
        if node._hooks:
            g = _run_hooks(node, g)
            borrowed.add(node)   # (a hook may hand back an array it keeps)
        op = node._op
        if found is not None:
            if node in found:
                found[node] = g
        elif op is None or node._retains_grad:  # a leaf (or a non-leaf that asked to keep its gradient)
            if node.grad is None and not create_graph and node not in borrowed and g.dtype == node.data.dtype:
                node.grad = node._new(g)   # the usual case: an array its op made for it alone, kept without a copy
            else:
                _accumulate(node, g, create_graph)
        if op is None:
            continue
        if op is FREED:
            raise RuntimeError(RELEASED)
        if op.saved:  # the tensors it saved must be as its forward saw them
            parents = [p for p in op.parents if isinstance(p, Node)]
            if op._saved_versions != versions.record(parents, node):
                versions.check(op, parents, node)
        op.retain_graph = retain_graph
        if create_graph:
            input_grads = backward_recorded(op, node, g)
        else:
            input_grads = op.backward(g) if hook is None else hook(op, "backward", (g,), {})
        if type(input_grads) is not tuple:
            input_grads = (input_grads,)
        if len(input_grads) != len(op.parents):
            raise RuntimeError(f"function {type(op).__name__}.backward returned an incorrect number of gradients "
                               f"(expected {len(op.parents)}, got {len(input_grads)})")
        if state.anomaly:
            anomaly_mode.check_gradients(op, input_grads)
        for parent, pg, needs_grad in zip(op.parents, input_grads, op.needs_input_grad):
            if pg is None or not needs_grad:
                continue
            if parent._earlier:   # changed in place since op read it: the gradient goes to the value op read
                parent = _earlier_input(op, node, parent)
            if pg.shape != parent.data.shape:  # broadcasting is undone here, for every op (refused when strict)
                pg = refuse_shape(op, pg, parent) if state.strict_shapes else unbroadcast(pg, parent.data.shape)
            if parent in grads:
                grads[parent] = grads[parent] + pg   # a new array
                borrowed.discard(parent)
                continue
            grads[parent] = pg
            if pg is g or getattr(pg, "base", None) is not None or _twice(pg, input_grads):
                borrowed.add(parent)
        if not retain_graph:
            node._op = FREED
    return None if found is None else [found[x] for x in inputs]


def _earlier_input(op, node, parent):
    """as_of(parent, op.seq), refused when op's output is a view of parent's memory: that view changed with parent,
    so the graph it was recorded in no longer gives its gradient (PyTorch rebuilds a view's graph; minitorch does
    not)."""
    earlier = as_of(parent, op.seq)
    if earlier is not parent and type(op).is_view and versions.same_buffer(node.data, parent.data):
        raise RuntimeError(f"a view made by {type(op).__name__} of a tensor that an in-place op changed afterwards is "
                           f"used in this backward: its graph is the one from before the change; make the view after "
                           f"the in-place op, or use the out-of-place form (x = x * 2, not x.mul_(2))")
    return earlier


def _twice(array, arrays):
    """True when `array` (the object) is in `arrays` more than once."""
    n = 0
    for a in arrays:
        n += a is array
    return n > 1


def _accumulate(node, g, create_graph):
    """Add g to node.grad: in place on the fast path; as a new Tensor in the graph under create_graph."""
    if create_graph:
        # a copy in the leaf's dtype, as below, but recorded so that it can be differentiated
        g = g.clone() if g.dtype == node.dtype else g.to(dtype=node.dtype)
        node.grad = g if node.grad is None else node.grad + g
    elif node.grad is None:  # own the array: g may be shared with another node (Add returns the same g to both sides)
        node.grad = node._new(g.astype(node.dtype, copy=True))
    elif node.grad.requires_grad:  # left by a create_graph backward: its array belongs to a graph, so no +=
        node.grad = node._new(node.grad.data + g)
    else:  # (after FlatParameters.settle(), a parameter's .grad is a view of the flat buffer: this writes there)
        node.grad.data += g


def _run_hooks(node, g):
    """g after node's hooks (Tensor.register_hook): each sees the gradient as a Tensor and may return a new one."""
    for hook in list(node._hooks.values()):
        seen = g if isinstance(g, Node) else node._new(g)
        new = hook(seen)
        if new is None:
            continue
        if not isinstance(new, Node) or new.shape != node.shape:
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} returned "
                               f"{getattr(new, 'shape', type(new).__name__)} for a gradient of shape {node.shape}: "
                               f"a hook returns None or a Tensor of the gradient's shape")
        g = new if isinstance(g, Node) else new.data
    return g


__all__ = ["unbroadcast", "run_backward", "FREED"]
