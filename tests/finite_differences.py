"""Central differences in float64, the reference the engine's gradients are checked against (independent of it)."""
import numpy as np


def central_differences(f, arrays, eps=1e-6):
    """[d f / d a for a in arrays] for f(*arrays) -> float, each of a's shape."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            def at(delta):
                moved = [b.copy() for b in arrays]
                moved[k][i] += delta
                return f(*moved)
            g[i] = (at(eps) - at(-eps)) / (2 * eps)
        grads.append(g)
    return grads


def numeric_jacobian(f, x, eps=1e-6):
    """d f(x) / d x for f: array -> array, of shape f(x).shape + x.shape."""
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        jac[(...,) + i] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac
