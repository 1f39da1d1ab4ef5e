"""gradcheck: compare the analytic gradient from backward() with central finite differences, in float64;
gradgradcheck: the same for the second derivatives (the gradient of the gradient)."""
import numpy as np

from . import backend

from .core import enable_grad, grad, no_grad
from .core.higher_order import SavedIntermediateError
from .factories import zeros_like
from .tensor import Tensor


class GradcheckError(AssertionError):
    """An analytic gradient differs from its finite-difference estimate."""


def _as_outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _float64(inputs):
    """Float64 copies of the float tensors (keeping requires_grad); anything else as is."""
    return [Tensor._make(backend.to_device(np.array(x.numpy(), dtype=np.float64), x.device))
            .requires_grad_(x.requires_grad)
            if isinstance(x, Tensor) and x.dtype.kind == "f" else x for x in inputs]


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0):
    """Check d fn(*inputs) / d input for every input with requires_grad, raising GradcheckError on a mismatch.

    fn returns a tensor (or a tuple of tensors) of any shape. It is reduced to a scalar with fixed random weights
    w, L = sum(w * fn(x)), so one backward gives the full vector-Jacobian product; each input element's entry is
    compared with (L(x + eps) - L(x - eps)) / (2 eps). Inputs are copied to float64 first. Returns True.
    """
    x64 = _float64(inputs)
    checked = [i for i, x in enumerate(x64) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True")

    rng = np.random.default_rng(seed)
    outs = _as_outputs(fn(*x64))
    weights = [rng.standard_normal(o.shape) for o in outs]

    def scalar(args):
        with no_grad():
            return sum(float((o.numpy().astype(np.float64) * w).sum()) for o, w in zip(_as_outputs(fn(*args)), weights))

    # analytic: one backward of L = sum(w * out)
    loss = None
    for o, w in zip(outs, weights):
        if o.requires_grad:
            term = (o * Tensor._make(backend.to_device(w, o.device))).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()

    for i in checked:
        x = x64[i]
        analytic = x.grad.numpy() if x.grad is not None else np.zeros(x.shape)
        if analytic.shape != x.shape:
            raise GradcheckError(f"input {i}: gradient shape {analytic.shape} differs from input shape {x.shape}")
        flat = x.data.reshape(-1)  # a view into x.data: nudging it changes the input that fn sees
        for j in range(flat.size):
            original = flat[j].item()
            flat[j] = original + eps
            up = scalar(x64)
            flat[j] = original - eps
            down = scalar(x64)
            flat[j] = original
            numeric = (up - down) / (2 * eps)
            a = analytic.reshape(-1)[j]
            if not abs(a - numeric) <= atol + rtol * abs(numeric):
                index = np.unravel_index(j, x.shape) if x.ndim else ()
                raise GradcheckError(f"gradcheck failed for input {i} at index {tuple(int(k) for k in index)}: "
                                     f"analytic {a:.10g}, numerical {numeric:.10g} (shape {x.shape})")
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0):
    """Check the second derivatives of fn, raising GradcheckError on a mismatch (torch.autograd.gradgradcheck).

    The vector-Jacobian product vjp(x, v) = J(x)^T v, computed by mt.grad(create_graph=True), is itself checked with
    gradcheck: its gradient from backward (the second-order pass) against central differences of vjp, with respect
    to every input with requires_grad and to v. v (grad_outputs: one per output of fn) is random by default. Returns
    True.
    """
    x64 = _float64(inputs)
    checked = [i for i, x in enumerate(x64) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradgradcheck: no input has requires_grad=True")
    outs = _as_outputs(fn(*x64))
    rng = np.random.default_rng(seed + 1)
    if grad_outputs is None:
        grad_outputs = [rng.standard_normal(o.shape) for o in outs]
    grad_outputs = _as_outputs(grad_outputs)
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: fn has {len(outs)} outputs but {len(grad_outputs)} grad_outputs were given")
    vs = _float64([v if isinstance(v, Tensor) else Tensor._make(backend.to_device(np.asarray(v), o.device))
                   for v, o in zip(grad_outputs, outs)])
    for v in vs:
        v.requires_grad_(True)
    n = len(x64)

    def vjp(*args):
        xs, vs = args[:n], args[n:]
        with enable_grad():  # gradcheck evaluates under no_grad; the first derivative needs a graph
            outs = _as_outputs(fn(*xs))
            pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
            grads = grad([o for o, _ in pairs], [xs[i] for i in checked], [v for _, v in pairs], create_graph=True,
                         allow_unused=True)
        return tuple(zeros_like(xs[i]) if g is None else g for i, g in zip(checked, grads))

    try:
        return gradcheck(vjp, list(x64) + vs, eps=eps, atol=atol, rtol=rtol, seed=seed)
    except GradcheckError as failure:
        where = str(failure).replace("gradcheck failed for ", "", 1)
        raise GradcheckError(
            f"gradgradcheck failed at second order (the gradient of backward's result J^T v; inputs {n} and up are "
            f"the incoming gradients v) for {where}. The second derivative differentiates your backward: each of "
            f"its terms must be written with Tensor ops on what forward saved") from None
    except SavedIntermediateError as refused:
        raise GradcheckError(
            f"gradgradcheck failed at second order: {refused}. An array forward computed and saved (not an input, "
            f"not the output: sigmoid(x) in a SiLU, say) is a constant to the second derivative, which would then "
            f"be wrong (PyTorch gives that wrong number without a word): recompute it in backward from the saved "
            f"inputs, with Tensor ops") from None
