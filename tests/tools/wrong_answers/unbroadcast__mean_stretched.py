"""A wrong answer: the leading axes are summed, but the stretched size-1 axes are averaged."""
import numpy as np

MISTAKE = r"average|mean"


def unbroadcast(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] > 1)
    return np.mean(grad, axis=axes, keepdims=True) if axes else grad
