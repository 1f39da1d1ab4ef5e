"""A wrong answer: the size-1 axes are summed first, at the input's indices counted from the left, before the
leading axes are summed away: the shapes are not aligned on the right."""
import numpy as np

MISTAKE = r"align|counting from the left|leading axes"


def unbroadcast(grad, shape):
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            grad = np.sum(grad, axis=i, keepdims=True)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    return grad
