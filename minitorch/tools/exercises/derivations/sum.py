"""sum: d out / d a_i = 1 for every summed element: g put back to a's shape (the summed dims restored as size 1
when keepdim=False, then broadcast)."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops import normalize_dims
from minitorch.tools.exercises.mutation import factor, instead, pick, step

WORDS = {
    "put back": "putting the summed dims back as size 1 when keepdim=False (np.expand_dims(g, dims)) before "
                "broadcasting",
    ("put back", "at the end"): "the summed dims are put back as size-1 axes at the end of g, not at their places "
                                "(np.expand_dims(g, dims))",
    ("put back", "always"): "the summed dims are put back even when keepdim=True, where g already has them",
    ("put back", "inverted"): "the test of keepdim is reversed: the summed dims are put back when keepdim=True "
                              "(g has them) and not when keepdim=False",
    ("put back", "first only"): "only the first summed dim is put back (dim is a tuple: each of its dims is)",
    "g": "the incoming gradient g (each summed element gets g)",
    ("spread", "total"): "every element gets the sum of g, not the gradient of the output it was summed into",
    ("scale", "mean"): "the gradient is divided by the count of summed elements, as a mean's would be: a sum's "
                       "derivative is 1",
    ("scale", "count"): "the gradient is multiplied by the count of summed elements: a sum's derivative is 1 for "
                        "each element",
}


class Sum(Function):
    def forward(self, a, dim=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
        return a.sum(axis=self.dims, keepdims=keepdim)

    def backward(self, g):
        if step("put back"):
            if not self.keepdim:
                g = np.expand_dims(g, self.dims)
        elif instead("put back", "at the end"):
            if not self.keepdim:
                g = g.reshape(g.shape + (1,) * len(self.dims))
        elif instead("put back", "always"):
            g = np.expand_dims(g, self.dims)
        elif instead("put back", "inverted"):
            if self.keepdim:
                g = np.expand_dims(g, self.dims)
        elif instead("put back", "first only"):
            if not self.keepdim:
                g = np.expand_dims(g, self.dims[0])
        n = int(np.prod([self.shape[d] for d in self.dims]))
        spread = pick("spread", np.broadcast_to(factor("g", g), self.shape), total=np.full(self.shape, g.sum()))
        return spread * pick("scale", 1.0, mean=1.0 / n, count=float(n))
