"""Central differences in float64, the reference the engine's gradients are checked against. They call only the
NumPy function they are given (a NumPy form of the op, written in the test), never the code under test."""
import numpy as np


def central_differences(f, arrays, eps=1e-6):
    """[d f / d a for a in arrays] for f(*arrays) -> float, each of a's shape."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            def at(delta):
                moved = [b.copy() for b in arrays]
                moved[k][i] += delta
                return f(*moved)
            g[i] = (at(eps) - at(-eps)) / (2 * eps)
        grads.append(g)
    return grads


def vjp(f_np, inputs, w, eps=1e-6):
    """First order: [d/dx L for x in inputs] of L(x) = sum(w * f_np(*x)), i.e. J^T w, each of x's shape."""
    return central_differences(lambda *xs: float(np.sum(w * f_np(*xs))), inputs, eps)


def second_order(f_np, inputs, w, v, eps=1e-3):
    """Second order along v: ([H v for each input], J v) of L(x) = sum(w * f_np(*x)), where H v is the derivative of
    the first-order gradient vjp(x) along v and J v that of f_np along v (= d/dw <vjp, v>).

    Each is a central difference of step h of a central difference of step h, with a truncation error c h^2 + O(h^4)
    that is not small where f's higher derivatives are large (x ** -1 near 0.5: its fourth derivative is about 800).
    So both are computed at h = eps and eps / 2 and extrapolated (Richardson): (4 D(eps / 2) - D(eps)) / 3 cancels the
    h^2 terms, leaving O(eps^4) and the rounding noise (about 1e-16 |L| / eps^2).
    """
    def moved(sign, h):
        return [np.array(x + sign * h * d, dtype=np.float64) for x, d in zip(inputs, v)]

    def differences(h):
        up, down = vjp(f_np, moved(+1, h), w, h), vjp(f_np, moved(-1, h), w, h)
        hv = [(a - b) / (2 * h) for a, b in zip(up, down)]
        jv = (np.asarray(f_np(*moved(+1, h))) - np.asarray(f_np(*moved(-1, h)))) / (2 * h)
        return hv, jv

    (hv, jv), (hv_half, jv_half) = differences(eps), differences(eps / 2)
    return [(4 * b - a) / 3 for a, b in zip(hv, hv_half)], (4 * jv_half - jv) / 3


def numeric_jacobian(f, x, eps=1e-6):
    """d f(x) / d x for f: array -> array, of shape f(x).shape + x.shape."""
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        jac[(...,) + i] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac
