"""Reverse-mode autograd: the graph walk, unbroadcast, and grad().

`run_backward` visits the graph from the output back to the leaves in topological order (each node after every node
that uses it), calls each op's backward with the gradient of its output, sums the gradients that reach a node from
several uses, and undoes broadcasting in one place (`unbroadcast`).

Higher order (create_graph=True): the walk hands each backward Tensors instead of arrays: its saved inputs and output
become the graph's Tensors (save_for_backward declared which they are), so the same formulas record a graph that can
be differentiated again. A kernel (function.py) is replayed by its reference op for this: backward passes written
with operators and `minitorch.ops.array_ops` run on arrays and Tensors alike.
"""
import copy

import numpy as np

from .. import backend
from . import anomaly_mode, versions
from .node import Node
from .grad_mode import enable_grad, state

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
                if isinstance(parent, Node) and parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
    return order[::-1]  # roots first


def _leading_to(order, targets):
    """The nodes of `order` from which some target can be reached (the rest need no backward for mt.grad), and those
    whose graph was released (so that the walk reports it)."""
    needed = {id(t) for t in targets}
    for node in reversed(order):  # parents before the nodes that use them
        if id(node) not in needed and node._op is not None and (node._op is FREED or any(
                isinstance(p, Node) and id(p) in needed for p in node._op.parents)):
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
        parents = [p for p in op.parents if isinstance(p, Node)]
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
        if len(input_grads) != len(op.parents):
            raise RuntimeError(f"function {type(op).__name__}.backward returned an incorrect number of gradients "
                               f"(expected {len(op.parents)}, got {len(input_grads)})")
        if state.anomaly:
            anomaly_mode.check_gradients(op, input_grads)
        for parent, pg in zip(op.parents, input_grads):
            if pg is None or not isinstance(parent, Node) or not parent.requires_grad:
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
    elif node.grad is None:  # own the array: g may be shared with another node (Add returns the same g to both sides)
        node.grad = node._new(g.astype(node.dtype, copy=True))
    elif node.grad.requires_grad:  # left by a create_graph backward: its array belongs to a graph, so no +=
        node.grad = node._new(node.grad.data + g)
    else:  # (a flat parameter's .grad is a view of the flat gradient buffer: this writes there)
        node.grad.data += g


HINT = ("to be differentiated twice, a backward is written with operators, Tensor methods and minitorch.ops.array_ops "
        "(exp, log, sigmoid, tanh, erf, where, ...), which take an array or a Tensor, not NumPy functions")


def _twin(op, node):
    """A copy of op whose saved inputs and output are the graph's Tensors instead of their arrays (create_graph).
    A kernel is replaced by its reference op, replayed on the same inputs: kernels save what suits their device."""
    tensors = {id(p.data) if isinstance(p, Node) else id(p): p for p in op.parents}  # (a plain array input stays)
    reference = type(op).reference
    if reference is None:
        twin = copy.copy(op)
        tensors[id(node.data)] = node
    else:
        twin = reference()
        twin.needs_input_grad, twin.parents, twin.options = op.needs_input_grad, op.parents, op.options
        out = twin.forward(*[p.data if isinstance(p, Node) else p for p in op.parents], **op.options)
        tensors[id(out)] = node
    twin.saved = tuple(_as_graph_value(v, tensors, type(twin).__name__, i) for i, v in enumerate(twin.saved))
    return twin


def _as_graph_value(value, tensors, name, i):
    """A saved value under create_graph: a float input's or the output's array becomes its Tensor; masks, indices
    and other values without a gradient stay as they are."""
    if not (backend.is_array(value) or isinstance(value, np.generic)) or value.dtype.kind not in "fc":
        return value
    found = tensors.get(id(value))
    if found is None:
        raise RuntimeError(f"{name}: create_graph=True cannot differentiate its backward: save_for_backward's value "
                           f"{i} is a float array computed from its inputs; save the inputs (or the output) and "
                           f"compute it again in backward")
    return found


def _backward_recorded(op, node, g):
    """op's gradients as Tensors recorded in the graph (create_graph=True). g is a Tensor; node is op's output."""
    name = type(op).__name__
    twin = _twin(op, node)
    try:
        input_grads = twin.backward(g)
    except Exception as e:  # e.g. a NumPy function handed a Tensor
        raise RuntimeError(f"{name}: create_graph=True: its backward failed on Tensors ({type(e).__name__}: {e}); "
                           f"{HINT}") from e
    for pg in input_grads if isinstance(input_grads, tuple) else (input_grads,):
        if backend.is_array(pg) or isinstance(pg, np.generic):
            raise RuntimeError(f"{name}: create_graph=True: its backward returned an array, which would cut the "
                               f"gradient from the graph; {HINT}")
    return input_grads


def grad(outputs, inputs, grad_outputs=None, *, create_graph=False, retain_graph=None, allow_unused=False):
    """d(outputs)/d(inputs) as a tuple of Tensors shaped like `inputs` (torch.autograd.grad); .grad is not touched.

    outputs: a Tensor or a sequence; grad_outputs: the gradient for each output (None: 1 for a scalar output).
    create_graph=True records the computation, so the result can be differentiated again; retain_graph defaults to
    create_graph. allow_unused=True gives None for an input that the outputs do not depend on.
    """
    outputs = [outputs] if isinstance(outputs, Node) else list(outputs)
    single_input = isinstance(inputs, Node)
    inputs = [inputs] if single_input else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Node) or backend.is_array(grad_outputs):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad(): {len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    for i, x in enumerate(inputs):
        if not isinstance(x, Node) or not x.requires_grad:
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
            g = x._new(g.astype(x.dtype, copy=True))  # own the array: gradients may share one
        result.append(g)
    return tuple(result)


def initial_grad(t, grad, create_graph, who="backward()", hint="backward(grad)"):
    """The gradient that starts a backward from t: an array (a Tensor under create_graph) shaped like t."""
    if not isinstance(t, Node):
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
    elif isinstance(grad, Node):
        g = grad if create_graph else grad.data
    else:
        g = backend.xp_of(t.data).asarray(grad, dtype=t.dtype)
    if tuple(g.shape) != t.shape:
        raise ValueError(f"{who}: the gradient has shape {tuple(g.shape)} but the tensor has shape {t.shape}")
    return t._new(g) if create_graph and backend.is_array(g) else g


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


__all__ = ["unbroadcast", "run_backward", "grad", "initial_grad"]
