"""Derivatives of whole functions, as torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp.

`inputs` is a Tensor or a tuple of Tensors; results follow PyTorch's nesting: a Tensor for one input (and one
output), a tuple per input (or per output), a tuple of tuples for both. Each is built from reverse-mode passes
(`grad`): a Jacobian row per output element, and jvp by the double-vjp trick (the derivative of <J^T u, v> in u).
Results are detached unless create_graph=True, which keeps them differentiable (with respect to inputs that
require grad).
"""
from .. import factories, functions
from ..tensor import Tensor
from ..core import grad


def _as_tuple(x, who, what):
    single = isinstance(x, Tensor)
    items = (x,) if single else tuple(x)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: {what}[{i}] must be a Tensor, got {type(t).__name__}")
    return single, items


def _prepare(inputs, create_graph, who):
    """The inputs as leaves that require grad (the inputs themselves under create_graph if they require grad)."""
    single, items = _as_tuple(inputs, who, "inputs")
    for i, t in enumerate(items):
        if t.dtype.kind not in "fc":
            raise TypeError(f"{who}: inputs[{i}] must be floating-point, got dtype {t.dtype}")
    return single, tuple(t if create_graph and t.requires_grad else t.detach().requires_grad_() for t in items)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, who):
    """grad() with zeros for the inputs the outputs do not depend on (an error for them if strict)."""
    live = [o.requires_grad for o in outputs]
    if not any(live):
        found = (None,) * len(inputs)
    else:
        pairs = [(o, g) for o, g, ok in zip(outputs, grad_outputs, live) if ok]
        found = grad([o for o, _ in pairs], inputs, [g for _, g in pairs], create_graph=create_graph,
                     retain_graph=True, allow_unused=True)
    result = []
    for i, (x, g) in enumerate(zip(inputs, found)):
        if g is None:
            if strict:
                raise RuntimeError(f"{who}: the output does not depend on inputs[{i}] (strict=True)")
            g = factories.zeros_like(x)
        result.append(g)
    return tuple(result)


def _finish(t, create_graph):
    return t if create_graph else t.detach()


def _call(func, inputs, who):
    single, outputs = _as_tuple(func(*inputs), who, "the function's outputs")
    return single, outputs


def jacobian(func, inputs, create_graph=False, strict=False):
    """d func(inputs) / d inputs: for output o and input x, a Tensor of shape o.shape + x.shape."""
    single_in, xs = _prepare(inputs, create_graph, "jacobian")
    single_out, outs = _call(func, xs, "jacobian")
    table = []
    for o in outs:
        rows = []
        for k in range(o.numel()):  # one reverse pass per output element: the row d o[k] / d inputs
            onehot = factories.zeros(o.numel(), dtype=o.dtype, device=o.device)
            onehot.data[k] = 1
            rows.append(_grads([o], xs, [onehot.reshape(o.shape)], create_graph, strict, "jacobian"))
        per_input = []
        for j, x in enumerate(xs):
            stacked = functions.stack([r[j] for r in rows]) if rows else factories.zeros((0,) + x.shape, dtype=x.dtype)
            per_input.append(_finish(stacked.reshape(o.shape + x.shape), create_graph))
        table.append(tuple(per_input))
    return _nest(table, single_out, single_in)


def _nest(table, single_out, single_in):
    """PyTorch's nesting of table[output][input]."""
    if single_out and single_in:
        return table[0][0]
    if single_out:
        return table[0]
    if single_in:
        return tuple(row[0] for row in table)
    return tuple(table)


def hessian(func, inputs, create_graph=False, strict=False):
    """Second derivatives of func (which returns a one-element Tensor): for inputs x_i, x_j a Tensor of shape
    x_i.shape + x_j.shape; one Tensor for one input, a tuple of tuples for several."""
    single_in, xs = _prepare(inputs, create_graph, "hessian")

    def gradient(*args):
        _, out = _call(func, args, "hessian")
        if len(out) != 1 or out[0].numel() != 1:
            raise RuntimeError("hessian: the function must return a Tensor with a single element")
        gradients = _grads([out[0].reshape(())], args, [None], True, strict, "hessian")
        return gradients[0] if single_in else gradients

    return jacobian(gradient, xs[0] if single_in else xs, create_graph=create_graph, strict=strict)


def _vector(v, like, who, what):
    """v as a tuple shaped like the Tensors `like`; None is 1 for a single one-element Tensor."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"{who}: v can be None only when {what} is a single one-element Tensor")
        return (factories.ones_like(like[0]),)
    _, vs = _as_tuple(v, who, "v")
    if len(vs) != len(like) or any(a.shape != b.shape for a, b in zip(vs, like)):
        raise RuntimeError(f"{who}: v has shapes {[a.shape for a in vs]} but {what} has {[b.shape for b in like]}")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): v shaped like the outputs, the product shaped like the inputs."""
    single_in, xs = _prepare(inputs, create_graph, "vjp")
    single_out, outs = _call(func, xs, "vjp")
    vs = _vector(v, outs, "vjp", "the output")
    products = _grads(outs, xs, vs, create_graph, strict, "vjp")
    outs = tuple(_finish(o, create_graph) for o in outs)
    products = tuple(_finish(p, create_graph) for p in products)
    return (outs[0] if single_out else outs), (products[0] if single_in else products)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): v shaped like the inputs, the product shaped like the outputs. By the double-vjp trick:
    J v is the derivative in u of <J^T u, v>, which is linear in u."""
    single_in, xs = _prepare(inputs, create_graph, "jvp")
    single_out, outs = _call(func, xs, "jvp")
    vs = _vector(v, xs, "jvp", "the input")
    us = tuple(factories.zeros_like(o).requires_grad_() for o in outs)
    vjps = _grads(outs, xs, us, True, strict, "jvp")
    products = _grads(vjps, us, vs, create_graph, strict, "jvp")
    outs = tuple(_finish(o, create_graph) for o in outs)
    products = tuple(_finish(p, create_graph) for p in products)
    return (outs[0] if single_out else outs), (products[0] if single_out else products)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for func returning a one-element Tensor; v and the product shaped like the inputs."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for func returning a one-element Tensor; v and the product shaped like the inputs
    (H is symmetric for smooth functions, so H v = v^T H)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, who):
    single_in, xs = _prepare(inputs, create_graph, who)
    _, outs = _call(func, xs, who)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError(f"{who}: the function must return a Tensor with a single element")
    vs = _vector(v, xs, who, "the input")
    out = outs[0].reshape(())
    gradients = _grads([out], xs, [None], True, strict, who)
    products = _grads(list(gradients), xs, vs, create_graph, strict, who)
    products = tuple(_finish(p, create_graph) for p in products)
    return _finish(outs[0], create_graph), (products[0] if single_in else products)


__all__ = ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"]
