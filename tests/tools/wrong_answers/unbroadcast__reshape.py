"""A wrong answer: the leading axes are summed, then the gradient is reshaped to the input's shape where the
stretched size-1 axes must be summed."""
import numpy as np

MISTAKE = r"size 1 in the input's shape, stretched by broadcasting, is not summed|stretched"


def unbroadcast(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return np.reshape(grad, shape)
