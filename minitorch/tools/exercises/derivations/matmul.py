"""matmul: C = A B, dA = G B^T and dB = A^T G (the last two dims transposed), each summed back over the batch dims
its input was broadcast along."""
from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import pick

WORDS = {
    ("B^T", "B"): "dL/da is G B where it is G B^T: B is not transposed (dA_ik = sum_j G_ij B_kj)",
    ("dA order", "swapped"): "dL/da is B^T G: the product's factors in the wrong order (dA = G B^T)",
    ("A^T", "A"): "dL/db is A G where it is A^T G: A is not transposed (dB_kj = sum_i A_ik G_ij)",
    ("dB order", "transposed"): "dL/db is G^T A = (A^T G)^T: your dL/db is the right one transposed: a transpose "
                                "too many, or the product's factors in the wrong order",
    ("transpose", "dot_T"): ".T on a batched array reverses every axis ((B, n, k).T is (k, n, B)): transpose the "
                            "last two with x.swapaxes(-1, -2)",
    ("operands", "swapped"): "the two gradients are returned in the wrong order: (dB, dA) where apply(a, b) wants "
                             "(dA, dB)",
    ("sum a", "kept"): "dL/da is not summed back over the batch dims a was broadcast along",
    ("sum b", "kept"): "dL/db is not summed back over the batch dims b was broadcast along",
}


def _summed_to(grad, shape):
    """grad summed over the axes broadcasting added (leading) or stretched (size 1 in shape)."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


class MatMul(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        b_t = pick("transpose", b.swapaxes(-1, -2), dot_T=b.T)
        a_t = pick("transpose", a.swapaxes(-1, -2), dot_T=a.T)
        da = pick("dA order", g @ pick("B^T", b_t, B=b), swapped=b_t @ g)
        db = pick("dB order", pick("A^T", a_t, A=a) @ g, transposed=g.swapaxes(-1, -2) @ a)
        da, db = pick("sum a", _summed_to(da, a.shape), kept=da), pick("sum b", _summed_to(db, b.shape), kept=db)
        return pick("operands", (da, db), swapped=(db, da))
