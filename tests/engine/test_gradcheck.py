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
