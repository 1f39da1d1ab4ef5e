"""gradgradcheck's failure says it is the second order that differs, and what a saved intermediate does there: an
array forward computed and saved would be a constant to the second derivative, which would then be wrong (PyTorch
gives that wrong number without a word); minitorch refuses it and says to recompute it in backward."""
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
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        s = x.sigmoid()
        return g * s * (1 + x * (1 - s))


def x64():
    return mt.tensor(np.random.default_rng(0).standard_normal((2, 3)), dtype=np.float64, requires_grad=True)


def test_a_saved_intermediate_passes_gradcheck_and_fails_gradgradcheck_naming_second_order_and_why():
    assert mt.gradcheck(SiLUSavesSigmoid.apply, [x64()])
    with pytest.raises(mt.GradcheckError) as failure:
        mt.gradgradcheck(SiLUSavesSigmoid.apply, [x64()])
    text = str(failure.value)
    assert text.startswith("gradgradcheck failed at second order: SiLUSavesSigmoidBackward: create_graph=True cannot "
                           "differentiate its backward: save_for_backward's value 1 is a float array"), text
    assert "is a constant to the second derivative, which would then be wrong" in text, text
    assert text.endswith("recompute it in backward from the saved inputs, with Tensor ops"), text


def test_a_wrong_second_derivative_is_named_as_such():
    """A backward right at first order but not differentiable as written (one factor x detached)."""
    class Wrong(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x / 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x * x.detach()   # d/dx (x^3/3) = x^2, but only one factor carries the second derivative

    assert mt.gradcheck(Wrong.apply, [x64()])
    with pytest.raises(mt.GradcheckError) as failure:
        mt.gradgradcheck(Wrong.apply, [x64()])
    text = str(failure.value)
    assert text.startswith("gradgradcheck failed at second order (the gradient of backward's result") and \
        "for input 0 at index" in text and "written with Tensor ops on what forward saved" in text, text


def test_the_same_op_recomputing_its_intermediate_in_backward_passes_gradgradcheck():
    assert mt.gradgradcheck(SiLURecomputes.apply, [x64()])
