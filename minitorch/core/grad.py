"""grad(): d(outputs)/d(inputs) without touching .grad (torch.autograd.grad); the gradient a backward starts with."""
from .. import backend
from .backward import run_backward
from .node import Node


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
        if t.data.size != 1:
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


__all__ = ["grad", "initial_grad"]
