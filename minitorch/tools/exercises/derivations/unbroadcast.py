"""unbroadcast: every copy of an input's element contributes its gradient: sum over the leading axes broadcasting
added, then (keepdims) over the axes it stretched from size 1."""
import numpy as np

from minitorch.tools.exercises.mutation import instead, pick, step

WORDS = {
    "leading": "summing over the leading axes that broadcasting added",
    ("leading", "first_only"): "only the first of the leading axes that broadcasting added is summed: every one is",
    ("stretched", "no_keepdims"): "the stretched axes are summed without keepdims=True: an axis of size 1 in the "
                                  "input's shape disappeared",
    ("stretched", "none"): "an axis of size 1 in the input's shape, stretched by broadcasting, is not summed "
                           "(keepdims=True)",
    ("reduce", "mean"): "yours is the mean over the broadcast axes: sum, do not average",
    ("leading", "first_copy"): "only one copy's gradient is kept (grad[0] over the added leading axes): sum over every "
                               "copy",
    ("leading", "kept"): "the leading axes that broadcasting added are summed with keepdims=True: they must go, "
                         "the input's shape does not have them",
    ("result", "total"): "every element gets the sum of the whole gradient, where each gets the sum over its own "
                         "copies",
}


def unbroadcast(grad, shape):
    reduce = pick("reduce", np.sum, mean=np.mean)
    if step("leading"):
        grad = reduce(grad, axis=tuple(range(grad.ndim - len(shape))))
    elif instead("leading", "kept"):
        grad = reduce(grad, axis=tuple(range(grad.ndim - len(shape))), keepdims=True)
    elif instead("leading", "first_copy"):
        grad = grad[(0,) * (grad.ndim - len(shape))]
    elif instead("leading", "first_only"):
        grad = reduce(grad, axis=0) if grad.ndim > len(shape) else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = pick("stretched", reduce(grad, axis=stretched, keepdims=True), no_keepdims=reduce(grad, axis=stretched),
                    none=grad)
    return pick("result", grad, total=np.full(shape, grad.sum()))
