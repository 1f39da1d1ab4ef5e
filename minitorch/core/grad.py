"""grad(): d(outputs)/d(inputs) without touching .grad (torch.autograd.grad)."""
from .. import backend
from .backward import initial_grad, run_backward
from .value import Value


def grad(outputs, inputs, grad_outputs=None, *, create_graph=False, retain_graph=None, allow_unused=False):
    """d(outputs)/d(inputs) as a tuple of Tensors shaped like `inputs` (torch.autograd.grad); .grad is not touched.

    outputs: a Tensor or a sequence; grad_outputs: the gradient for each output (None: 1 for a scalar output).
    create_graph=True records the computation, so the result can be differentiated again; retain_graph defaults to
    create_graph. allow_unused=True gives None for an input that the outputs do not depend on.
    """
    outputs = [outputs] if isinstance(outputs, Value) else list(outputs)
    single_input = isinstance(inputs, Value)
    inputs = [inputs] if single_input else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Value) or backend.is_array(grad_outputs):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad(): {len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    for i, x in enumerate(inputs):
        if not isinstance(x, Value) or not x.requires_grad:
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


__all__ = ["grad"]
