"""mt.gradcheck itself: it passes correct gradients and, above all, catches wrong ones."""
import re

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import Function


class Cube(Function):
    """y = a^3 with a correct backward."""

    def forward(self, a):
        self.save_for_backward(a)
        return a ** 3

    def backward(self, g):
        a, = self.saved_tensors
        return g * 3 * a ** 2


class CubeWrongFactor(Cube):
    """A deliberately wrong backward: 2 a^2 instead of 3 a^2."""

    def backward(self, g):
        a, = self.saved_tensors
        return g * 2 * a ** 2


class CubeWrongAtOneElement(Cube):
    """Right everywhere except at flat position 4."""

    def backward(self, g):
        a, = self.saved_tensors
        out = g * 3 * a ** 2
        out.reshape(-1)[4] += 0.5
        return out


class MulForgetsB(Function):
    """a * b whose backward returns no gradient for b."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved_tensors
        return g * b, None


class MulWrongB(MulForgetsB):
    def backward(self, g):
        a, b = self.saved_tensors
        return g * b, g * b  # db should be g * a


def leaf(shape, seed=0, dtype=np.float64):
    return mt.tensor(np.random.default_rng(seed).uniform(0.5, 2.0, shape), dtype=dtype, requires_grad=True)


def test_passes_on_correct_gradients():
    x, y = leaf((3, 4)), leaf((4,), seed=1)
    assert mt.gradcheck(lambda a: Cube.apply(a), [x])
    assert mt.gradcheck(lambda a, b: (a * b).exp().sum(dim=0) / b, [x, y])


def test_catches_a_wrong_backward_and_names_input_index_and_values():
    x = leaf((2, 3))
    with pytest.raises(mt.GradcheckError) as info:
        mt.gradcheck(lambda a: CubeWrongFactor.apply(a), [x])
    message = str(info.value)
    assert "input 0" in message and "index (0, 0)" in message
    # the message carries both numbers: analytic w * 2a^2 and numerical w * 3a^2 for gradcheck's weight w
    analytic, numerical = (float(v) for v in re.findall(r"(?:analytic|numerical) (-?[\d.e+-]+)", message))
    assert numerical != 0
    assert analytic == pytest.approx(numerical * 2 / 3, rel=1e-4)


def test_catches_an_error_at_a_single_element_and_names_it():
    x = leaf((2, 3))
    with pytest.raises(mt.GradcheckError, match=r"input 0 at index \(1, 1\)"):
        mt.gradcheck(lambda a: CubeWrongAtOneElement.apply(a), [x])


def test_catches_a_wrong_gradient_of_the_second_input_only():
    x, y = leaf((3,)), leaf((3,), seed=1)
    with pytest.raises(mt.GradcheckError, match="input 1"):
        mt.gradcheck(lambda a, b: MulWrongB.apply(a, b), [x, y])


def test_catches_a_missing_gradient():
    x, y = leaf((3,)), leaf((3,), seed=1)
    with pytest.raises(mt.GradcheckError, match="input 1"):
        mt.gradcheck(lambda a, b: MulForgetsB.apply(a, b), [x, y])


def test_only_inputs_with_requires_grad_are_checked():
    """The wrong gradient of b goes unnoticed when b is a constant; integer and non-tensor inputs pass through."""
    x = leaf((3,))
    y = mt.tensor(np.ones(3), dtype=np.float64)
    assert mt.gradcheck(lambda a, b: MulWrongB.apply(a, b), [x, y])
    ids = mt.tensor([2, 0, 2])
    assert mt.gradcheck(lambda a, i, scale: a[i] * scale, [x, ids, 3.0])


def test_multiple_outputs_are_all_checked():
    x = leaf((2, 2))
    assert mt.gradcheck(lambda a: (a.exp(), a.sum(dim=0)), [x])
    with pytest.raises(mt.GradcheckError):
        mt.gradcheck(lambda a: (a.exp(), CubeWrongFactor.apply(a)), [x])


def test_float32_inputs_are_checked_in_float64_and_left_untouched():
    x = leaf((3,), dtype=np.float32)
    before = x.numpy().copy()
    assert mt.gradcheck(lambda a: Cube.apply(a).log(), [x], atol=1e-7, rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), before)
    assert x.grad is None  # the check ran on float64 copies


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="requires_grad"):
        mt.gradcheck(lambda a: a * 2, [mt.tensor([1.0, 2.0])])


# ----- the mistake named beside the element (minitorch/gradcheck_diagnosis.py): each written as a user writes an
# op, in the class form (forward(self, arrays)) and in PyTorch's ctx form (static methods on Tensors) -----

class CubeSign(Cube):
    def backward(self, g):
        a, = self.saved_tensors
        return -(g * 3 * a ** 2)


class CubeDoubled(Cube):
    def backward(self, g):
        a, = self.saved_tensors
        return g * 6 * a ** 2


class MeanWithoutCount(Function):
    """The mean over dim 1 whose backward forgets the 1/n."""

    def forward(self, a):
        self.shape = a.shape
        return a.mean(axis=1)

    def backward(self, g):
        return np.broadcast_to(g[:, None], self.shape)


class MatMulTransposedDb(Function):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        return g @ b.T, g.T @ a   # db should be a.T @ g


class MulSwapped(MulForgetsB):
    def backward(self, g):
        a, b = self.saved_tensors
        return g * a, g * b


class RowBias(Function):
    """x (n, m) + b (n,) along the rows: b is copied along axis 1, which the walk's unbroadcast cannot know."""

    def forward(self, x, b):
        return x + b[:, None]

    def backward(self, g):
        return g, g   # db should be g summed over axis 1


class MulWritesIntoG(MulForgetsB):
    def backward(self, g):
        a, b = self.saved_tensors
        g *= b
        return g, g * a / b * a


class CtxCubeSign(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a * a

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return -(g * 3 * a * a)


class CtxCubeHalved(CtxCubeSign):
    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * 1.5 * a * a


class CtxMatMulTransposedDb(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.T, g.T @ a


class CtxMulSwapped(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * a, g * b


class CtxRowBias(Function):
    @staticmethod
    def forward(ctx, x, b):
        return x + b.reshape(-1, 1)

    @staticmethod
    def backward(ctx, g):
        return g, g


class CtxMulWritesIntoG(CtxMulSwapped):
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        g.mul_(b)
        return g, g * a / b * a


SIGN = r"likely mistake: the sign is flipped"
SWAP = r"likely mistake: your gradient of input 0 is the right gradient of input 1: the inputs' gradients are swapped"
BROADCAST = (r"likely mistake: your backward returned input 1's gradient in shape \(4, 4\), the shape it was broadcast "
             r"to, for an input \(4,\): a broadcast not summed back.*summed over axes \(1,\) it is right")
IN_PLACE = r"likely mistake: {}\.backward writes into its incoming gradient g \(.*test_gradcheck\.py, line \d+: {}\)"
NAMED = [
    ("sign", lambda a: CubeSign.apply(a), [(2, 3)], SIGN),
    ("sign, ctx form", lambda a: CtxCubeSign.apply(a), [(2, 3)], SIGN),
    ("scale 2", lambda a: CubeDoubled.apply(a), [(2, 3)], r"likely mistake: a constant factor 2 too large \(a term "
                                                          r"counted twice\)"),
    ("scale 1/2, ctx form", lambda a: CtxCubeHalved.apply(a), [(2, 3)], r"likely mistake: 1/2 of the right value"),
    ("scale n", lambda a: MeanWithoutCount.apply(a), [(2, 5)], r"likely mistake: a constant factor 5 too large \(n = "
                                                               r"5: the size of dim 1 of input 0\)"),
    ("transpose, square", lambda a, b: MatMulTransposedDb.apply(a, b), [(3, 3), (3, 3)],
     r"input 1 at index .*likely mistake: your gradient of input 1 is the right one transposed"),
    ("transpose, (4, 2)", lambda a, b: MatMulTransposedDb.apply(a, b), [(3, 4), (4, 2)],
     r"backward failed: Function MatMulTransposedDb.backward returned an invalid gradient - got \[2, 4\] but expected "
     r"shape compatible with \[4, 2\]\n  likely mistake: your backward returned input 1's gradient in shape \(2, 4\) "
     r"for an input \(4, 2\): the right one transposed"),
    ("transpose, ctx form", lambda a, b: CtxMatMulTransposedDb.apply(a, b), [(3, 4), (4, 2)],
     r"likely mistake: your backward returned input 1's gradient in shape \(2, 4\) .*: the right one transposed"),
    ("swap", lambda a, b: MulSwapped.apply(a, b), [(3,), (3,)], SWAP),
    ("swap, ctx form", lambda a, b: CtxMulSwapped.apply(a, b), [(3,), (3,)], SWAP),
    ("unsummed broadcast", lambda x, b: RowBias.apply(x, b), [(4, 4), (4,)], BROADCAST),
    ("unsummed broadcast, ctx form", lambda x, b: CtxRowBias.apply(x, b), [(4, 4), (4,)], BROADCAST),
    ("in place into g", lambda a, b: MulWritesIntoG.apply(a, b), [(3,), (3,)],
     IN_PLACE.format("MulWritesIntoG", r"g \*= b")),
    ("in place into g, ctx form", lambda a, b: CtxMulWritesIntoG.apply(a, b), [(3,), (3,)],
     IN_PLACE.format("CtxMulWritesIntoG", r"g\.mul_\(b\)")),
    ("in place into a read-only g", lambda a, b: MulWritesIntoG.apply(a, b).sum(), [(3,), (3,)],
     r"backward failed: .*read-only.*\n  " + IN_PLACE.format("MulWritesIntoG", r"g \*= b")),
]


@pytest.mark.parametrize("fn, shapes, named", [case[1:] for case in NAMED], ids=[case[0] for case in NAMED])
def test_a_failure_names_the_mistake_beside_the_element(fn, shapes, named):
    inputs = [leaf(shape, seed=k) for k, shape in enumerate(shapes)]
    with pytest.raises(mt.GradcheckError) as info:
        mt.gradcheck(fn, inputs)
    message = str(info.value)
    assert re.search(named, message, re.S), message
    assert re.search(r"(at index \(\d+(, \d+)*,?\): analytic|backward failed)", message), message


def test_a_wrong_gradient_that_is_no_known_mistake_is_given_numbers_only():
    """CubeWrongAtOneElement is right but at one element: no mutation matches it, so none is named."""
    with pytest.raises(mt.GradcheckError) as info:
        mt.gradcheck(lambda a: CubeWrongAtOneElement.apply(a), [leaf((2, 3))])
    assert "likely mistake" not in str(info.value)


def test_the_mutations_are_told_apart_on_arrays():
    """gradcheck_diagnosis.name on plain arrays: each mutation of the right gradients is named as itself, and the
    right gradient or an unrelated one is named nothing."""
    from minitorch import gradcheck_diagnosis as diagnosis
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    right = [a, b]
    assert diagnosis.name(a, right, 0) == ""
    assert diagnosis.name(rng.standard_normal((3, 4)), right, 0) == ""
    assert diagnosis.name(-a, right, 0) == "the sign is flipped"
    assert diagnosis.name(b, right, 0).startswith("your gradient of input 0 is the right gradient of input 1")
    assert diagnosis.name(0.5 * a, right, 0).startswith("1/2 of the right value")
    assert "factor 4 too large (n = 4: the size of dim 1 of input 0)" in diagnosis.name(4 * a, right, 0,
                                                                                         shapes=[("input 0", (3, 4))])
    assert "transposed" in diagnosis.name(a.T.reshape(3, 4), right, 0, raw=a.T)
    copies = np.broadcast_to(a.sum(axis=0) / 3, (3, 4))   # (3, 4) summed over axis 0 is a's column sums
    assert "summed over axes (0,) it is right" in diagnosis.name(np.zeros(4), [a.sum(axis=0)], 0, raw=copies)



def test_the_mistake_is_named_for_tensors_on_the_device_too(device):
    """The gradient a backward returned, read on the host: a transposed one is named on "cuda" as on the CPU."""
    a = mt.tensor(np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)), requires_grad=True, device=device)
    b = mt.tensor(np.random.default_rng(1).uniform(0.5, 2.0, (4, 2)), requires_grad=True, device=device)
    with pytest.raises(mt.GradcheckError, match=r"likely mistake: your backward returned input 1's gradient in shape "
                                                r"\(2, 4\) for an input \(4, 2\): the right one transposed"):
        mt.gradcheck(lambda x, y: MatMulTransposedDb.apply(x, y), [a, b])
