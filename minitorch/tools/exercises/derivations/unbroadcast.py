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
    ("stretched", "reshape"): "the gradient is reshaped to the input's shape where an axis of size 1 in the input's "
                              "shape, stretched by broadcasting, must be summed (keepdims=True): a reshape does not "
                              "add up the copies",
    ("reduce", "mean"): "yours is the mean over the broadcast axes: sum, do not average",
    ("leading", "first_copy"): "only one copy's gradient is kept (grad[0] over the added leading axes): sum over every "
                               "copy",
    ("leading", "kept"): "the leading axes that broadcasting added are summed with keepdims=True: they must go, "
                         "the input's shape does not have them",
    ("aligned", "from_left"): "the stretched axes are summed at the input's indices counted from the left, before the "
                              "leading axes are summed away: broadcasting aligns the shapes on the right, so sum the "
                              "leading axes first",
    ("result", "total"): "every element gets the sum of the whole gradient, where each gets the sum over its own "
                         "copies",
}


def unbroadcast(grad, shape):
    reduce = pick("reduce", np.sum, mean=np.mean)
    if step("aligned"):
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
            grad = pick("stretched", reduce(grad, axis=stretched, keepdims=True),
                        no_keepdims=reduce(grad, axis=stretched), none=grad,
                        reshape=grad.reshape(shape))
    elif instead("aligned", "from_left"):
        for i, n in enumerate(shape):
            if n == 1 and grad.shape[i] != 1:
                grad = reduce(grad, axis=i, keepdims=True)
        grad = reduce(grad, axis=tuple(range(grad.ndim - len(shape))))
    return pick("result", grad, total=np.full(shape, grad.sum()))
