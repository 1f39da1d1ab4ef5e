"""gradgradcheck's failure says it is the second order that differs, and what a saved intermediate does there: a
backward that reads an array forward computed and saved treats it as a constant at second order (as PyTorch does)."""
import numpy as np
import pytest

import minitorch as mt


class SiLUSavesSigmoid(mt.autograd.Function):
    """A correct first derivative: silu(x) = x s, s = sigmoid(x), d silu = s (1 + x (1 - s)); s saved from forward."""

    @staticmethod
    def forward(ctx, x):
        s = x.sigmoid()
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s * (1 + x * (1 - s))


class SiLURecomputes(SiLUSavesSigmoid):
    """The same, with s recomputed in backward from the saved input: differentiable again."""

    @staticmethod
    def backward(ctx, g):
        x, _ = ctx.saved_tensors
        s = x.sigmoid()
        return g * s * (1 + x * (1 - s))


def x64():
    return mt.tensor(np.random.default_rng(0).standard_normal((2, 3)), dtype=np.float64, requires_grad=True)


def test_a_saved_intermediate_passes_gradcheck_and_fails_gradgradcheck_naming_second_order_and_why():
    assert mt.gradcheck(SiLUSavesSigmoid.apply, [x64()])
    with pytest.raises(mt.GradcheckError) as failure:
        mt.gradgradcheck(SiLUSavesSigmoid.apply, [x64()])
    text = str(failure.value)
    assert text.startswith("gradgradcheck failed at second order") and "for input 0 at index" in text, text
    assert "treats it as a constant at second order, as PyTorch does: recompute it in backward" in text, text


def test_the_same_op_recomputing_its_intermediate_in_backward_passes_gradgradcheck():
    assert mt.gradgradcheck(SiLURecomputes.apply, [x64()])
