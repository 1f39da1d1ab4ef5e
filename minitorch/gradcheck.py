"""gradcheck: compare the analytic gradient from backward() with central finite differences, in float64;
gradgradcheck: the same for the second derivatives (the gradient of the gradient)."""
import os
import traceback

import numpy as np

from . import backend, gradcheck_diagnosis
from .core import enable_grad, grad, no_grad, op_hook
from .core.grad_mode import state
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
    compared with (L(x + eps) - L(x - eps)) / (2 eps). Inputs are copied to float64 first. On a mismatch the error
    names, beside the element, the mistake whose gradient the analytic one is where one matches (a sign, a constant
    scale, a transpose, the inputs' gradients swapped, a broadcast not summed back: gradcheck_diagnosis.py), or the
    op whose backward writes into its incoming gradient. Returns True.
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
    try:
        _weighted_loss_backward(outs, weights)
    except (ValueError, RuntimeError) as e:
        if gradcheck_diagnosis.writes_read_only(e):
            written = _watched(fn, x64, weights)[1]
            raise GradcheckError(f"gradcheck: backward failed: {e}" + (f"\n  likely mistake: {written}" if written
                                                                       else "")) from None
        if not _misshaped(e):
            raise
        raise GradcheckError(f"gradcheck: backward failed: {e}"
                             + _shape_diagnosis(fn, x64, checked, outs, weights, scalar, eps, atol, rtol)) from None

    analytic = {i: x64[i].grad.numpy() if x64[i].grad is not None else np.zeros(x64[i].shape) for i in checked}
    for i in checked:
        if analytic[i].shape != x64[i].shape:
            raise GradcheckError(f"input {i}: gradient shape {analytic[i].shape} differs from input shape "
                                 f"{x64[i].shape}")
    for i in checked:
        x = x64[i]
        for j in range(x.data.size):
            numeric = _numerical_at(x, j, scalar, x64, eps)
            a = analytic[i].reshape(-1)[j]
            if not abs(a - numeric) <= atol + rtol * abs(numeric):
                index = np.unravel_index(j, x.shape) if x.ndim else ()
                why = _diagnosis(fn, x64, checked, i, analytic, outs, weights, scalar, eps, atol, rtol)
                raise GradcheckError(f"gradcheck failed for input {i} at index {tuple(int(k) for k in index)}: "
                                     f"analytic {a:.10g}, numerical {numeric:.10g} (shape {x.shape}){why}")
    return True


def _weighted_loss_backward(outs, weights):
    loss = None
    for o, w in zip(outs, weights):
        if o.requires_grad:
            term = (o * Tensor._make(backend.to_device(w, o.device))).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()


def _numerical_at(x, j, scalar, x64, eps):
    """(L(x + eps e_j) - L(x - eps e_j)) / (2 eps) for element j (flat) of input x, one of x64."""
    flat = x.data.reshape(-1)  # a view into x.data: nudging it changes the input that fn sees
    original = flat[j].item()
    flat[j] = original + eps
    up = scalar(x64)
    flat[j] = original - eps
    down = scalar(x64)
    flat[j] = original
    return (up - down) / (2 * eps)


def _diagnosis(fn, x64, checked, i, analytic, outs, weights, scalar, eps, atol, rtol):
    """'\n  likely mistake: ...' for a failed check of input i, or '': an op that writes into its incoming gradient,
    else the mutation of the right gradients (every checked input's, by central differences) that input i's is."""
    raw, written = _watched(fn, x64, weights)
    if written:
        return f"\n  likely mistake: {written}"
    numeric = [None] * len(x64)
    for k in checked:
        numeric[k] = np.array([_numerical_at(x64[k], j, scalar, x64, eps) for j in range(x64[k].data.size)]
                              ).reshape(x64[k].shape)
    shapes = [(f"input {k}", x64[k].shape) for k in checked] + [(f"output {k}", o.shape) for k, o in enumerate(outs)]
    found = gradcheck_diagnosis.name(analytic[i], numeric, i, raw.get(i), shapes, rtol=rtol, atol=atol)
    return f"\n  likely mistake: {found}" if found else ""


def _shape_diagnosis(fn, x64, checked, outs, weights, scalar, eps, atol, rtol):
    """'\n  likely mistake: ...' when the engine refused a gradient that its input's shape does not broadcast to: what
    that gradient, laid out in the input's shape, is of the right ones (a transpose, say), or ''."""
    raw = _watched(fn, x64, weights)[0]
    for i in checked:
        if i in raw and raw[i].shape != x64[i].shape and raw[i].size == x64[i].data.size:
            numeric = [None] * len(x64)
            for k in checked:
                numeric[k] = np.array([_numerical_at(x64[k], j, scalar, x64, eps) for j in range(x64[k].data.size)]
                                      ).reshape(x64[k].shape)
            shapes = [(f"input {k}", x64[k].shape) for k in checked] + [(f"output {k}", o.shape)
                                                                         for k, o in enumerate(outs)]
            found = gradcheck_diagnosis.name(raw[i].reshape(x64[i].shape), numeric, i, raw[i], shapes, rtol=rtol,
                                             atol=atol)
            return f"\n  likely mistake: {found}" if found else ""
    return ""


def _misshaped(error):
    """Whether error is the walk's refusal of a gradient that its input's shape does not broadcast to."""
    return "returned an invalid gradient" in str(error)


class _Stop(Exception):
    pass


def _user_line(error):
    """' (FILE, line N: SOURCE)': the last frame of error's traceback outside minitorch and NumPy, or ''."""
    package = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith(package)
              and f"{os.sep}numpy{os.sep}" not in f.filename]
    return f" ({frames[-1].filename}, line {frames[-1].lineno}: {frames[-1].line})" if frames else ""


def _watched(fn, x64, weights):
    """The analytic pass again, on copies, with each op's incoming gradient read-only (through core.op_hook; not
    while another hook runs): ({input index: what the op that reads that input returned for it, before the walk
    summed it to the input's shape}, a message naming an op whose backward writes into its gradient, or '')."""
    if state.op_hook is not None:   # (the profiler's)
        return {}, ""
    xs = _float64(x64)
    index = {id(x): k for k, x in enumerate(xs) if isinstance(x, Tensor) and x.requires_grad}
    raw, written = {}, []

    def hook(op, phase, args, options):
        if phase == "forward":
            return op.forward(*args, **options)
        frozen = tuple(gradcheck_diagnosis.read_only_copy(g) for g in args)
        try:
            grads = op.backward(*frozen)
        except (ValueError, RuntimeError) as e:
            if not gradcheck_diagnosis.writes_read_only(e):
                raise
            who = (getattr(type(op), "fn", None) or type(op)).__name__
            written.append(f"{who}.backward writes into its incoming gradient g{_user_line(e)}: the engine hands the "
                           f"same g to several ops (an Add's two inputs) and may hand a read-only one (a sum's "
                           f"broadcast): compute a new array (g * b, not g *= b)")
            raise _Stop from None
        for parent, returned in zip(op.parents, grads if isinstance(grads, tuple) else (grads,)):
            if id(parent) in index and backend.is_array(returned):
                raw[index[id(parent)]] = backend.to_numpy(returned)   # (a failure's diagnosis: on the host)
        return grads

    try:
        with op_hook(hook):
            _weighted_loss_backward(_as_outputs(fn(*xs)), weights)
    except _Stop:
        pass
    except RuntimeError as e:   # a misshaped gradient: raw holds it already
        if not _misshaped(e):
            raise
    return raw, written[0] if written else ""


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
