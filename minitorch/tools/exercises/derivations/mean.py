"""mean: as sum, times 1/n, n the count of elements averaged into each output (the product of the reduced dims'
sizes)."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims
from minitorch.tools.exercises.mutation import instead, pick, scale, step


def FACTS(arrays, options):
    from minitorch.ops import normalize_dims
    shape = arrays[0].shape
    dims = normalize_dims(options["dim"], len(shape))
    return {"n": int(np.prod([shape[d] for d in dims])), "first": shape[dims[0]], "size": int(np.prod(shape))}


WORDS = {
    "1/n": "the mean's 1/n (n = {n}, the count of elements averaged into each output)",
    ("n", "first_dim"): "n is the size of the first reduced dim only ({first}) where it is the product of every "
                        "reduced dim's size (n = {n})",
    ("n", "every_element"): "n counts every element of a ({size}) where it is the count averaged into each output "
                            "(n = {n})",
    "put back": "putting the reduced dims back as size 1 when keepdim=False (np.expand_dims(g, dims)) before "
                "broadcasting",
    ("put back", "at the end"): "the reduced dims are put back as size-1 axes at the end of g, not at their places "
                                "(np.expand_dims(g, dims))",
    ("put back", "always"): "the reduced dims are put back even when keepdim=True, where g already has them",
    ("put back", "first only"): "only the first reduced dim is put back (dim is a tuple: each of its dims is)",
}


class Mean(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        self.n = int(np.prod([a.shape[d] for d in self.dims]))
        return a.sum(axis=self.dims, keepdims=keepdim) / self.n

    def backward(self, g):
        if step("put back"):
            if not self.keepdim:
                g = np.expand_dims(g, self.dims)
        elif instead("put back", "at the end"):
            if not self.keepdim:
                g = g.reshape(g.shape + (1,) * len(self.dims))
        elif instead("put back", "always"):
            g = np.expand_dims(g, self.dims)
        elif instead("put back", "first only"):
            if not self.keepdim:
                g = np.expand_dims(g, self.dims[0])
        n = pick("n", self.n, first_dim=self.shape[self.dims[0]], every_element=int(np.prod(self.shape)))
        return np.broadcast_to(g, self.shape) * scale("1/n", 1.0 / n)
