"""Functions in PyTorch's ctx form (core/ctx_form.py): forward(ctx, ...) and backward(ctx, ...) as static methods on
Tensors, checked against central finite differences, against PyTorch where it is installed, and for PyTorch's rules
(needs_input_grad, mark_non_differentiable, non-Tensor arguments, several outputs, the counts and version errors)."""
import numpy as np
import pytest

import minitorch as mt
from tests.finite_differences import second_order, vjp


def legendre_class(base):
    """PyTorch's "Defining new autograd Functions" tutorial's Function, as written there, on `base` (minitorch's or
    torch's autograd.Function)."""
    class Legendre(base):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)
    return Legendre


Legendre = legendre_class(mt.autograd.Function)


class ScaledExp(mt.autograd.Function):   # saves its output; a number argument with ctx attributes
    @staticmethod
    def forward(ctx, x, scale):
        y = (x * scale).exp()
        ctx.scale = scale
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y * ctx.scale, None


def legendre_np(x):
    return 0.5 * (5 * x ** 3 - 3 * x)


def f64(values):
    return mt.tensor(values, dtype=mt.float64, requires_grad=True)


X = np.array([-0.7, 0.2, 0.9, 1.3])
W = np.array([0.3, -1.1, 0.8, 0.5])


def test_first_derivative_matches_finite_differences():
    x = f64(X)
    (Legendre.apply(x) * mt.tensor(W, dtype=mt.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), vjp(legendre_np, [X], W)[0], rtol=1e-7, atol=1e-9)


def test_a_saved_output_and_a_number_argument():
    x = f64(X)
    y = ScaledExp.apply(x, 0.5)
    np.testing.assert_allclose(y.numpy(), np.exp(0.5 * X))
    (y * mt.tensor(W, dtype=mt.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), vjp(lambda a: np.exp(0.5 * a), [X], W)[0], rtol=1e-7, atol=1e-9)


def test_second_derivative_matches_finite_differences_of_the_first():
    """backward written with Tensor ops records under create_graph, through the saved input and the saved output."""
    v = np.array([0.4, -0.2, 1.0, 0.3])
    for fn, f_np in ((Legendre.apply, legendre_np), (lambda a: ScaledExp.apply(a, 0.5), lambda a: np.exp(0.5 * a))):
        x = f64(X)
        (g,) = mt.grad((fn(x) * mt.tensor(W, dtype=mt.float64)).sum(), x, create_graph=True)
        (hv,) = mt.grad((g * mt.tensor(v, dtype=mt.float64)).sum(), x)
        want, _ = second_order(f_np, [X], W, [v])
        np.testing.assert_allclose(hv.numpy(), want[0], rtol=1e-6, atol=1e-8)


def test_gradcheck_and_gradgradcheck_pass():
    x = f64(X)
    assert mt.gradcheck(Legendre.apply, (x,))
    assert mt.gradgradcheck(Legendre.apply, (x,))


def test_forward_runs_with_grad_recording_off_and_sees_needs_input_grad():
    seen = {}

    class Probe(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["grad_enabled"], seen["needs"] = mt.is_grad_enabled(), ctx.needs_input_grad
            inner = a * b
            seen["inner requires grad"] = inner.requires_grad
            return inner * k

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    a, b = f64([1.0, 2.0]), mt.tensor([3.0, 4.0], dtype=mt.float64)
    out = Probe.apply(a, b, 2.0)
    assert seen == {"grad_enabled": False, "needs": (True, False, False), "inner requires grad": False}
    assert out.requires_grad and not out.is_leaf


def test_no_input_that_needs_a_gradient_records_nothing():
    out = Legendre.apply(mt.tensor([1.0, 2.0]))
    assert not out.requires_grad and out.is_leaf


def test_several_outputs_each_send_their_gradient_and_unused_ones_arrive_as_zeros():
    received = []

    class SplitScale(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            received.append((g2.numpy().copy(), g3.numpy().copy()))
            return g2 * 2 + g3 * 3

    x = f64([1.0, 2.0])
    two, three = SplitScale.apply(x)
    (two.sum() + (three * three).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 + 3 * 2 * 3 * x.numpy())
    x.grad = None
    two, three = SplitScale.apply(x)
    two.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(received[-1][1], [0.0, 0.0])   # materialized, as PyTorch's default


def test_mark_non_differentiable_output():
    class SortWithIndex(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            order = np.argsort(x.numpy())
            index = mt.tensor(order)
            ctx.mark_non_differentiable(index)
            ctx.order = order
            return x[order], index

        @staticmethod
        def backward(ctx, g, _):
            out = np.zeros(g.shape)
            out[ctx.order] = g.numpy()
            return mt.tensor(out, dtype=mt.float64)

    x = f64([3.0, 1.0, 2.0])
    values, index = SortWithIndex.apply(x)
    assert values.requires_grad and not index.requires_grad
    (values * mt.tensor([1.0, 10.0, 100.0], dtype=mt.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100.0, 1.0, 10.0])


def test_a_wrong_gradient_count_and_a_gradient_for_a_number_raise_pytorchs_errors():
    class TooFew(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    class ForANumber(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    a = f64([1.0])
    with pytest.raises(RuntimeError, match=r"function TooFewBackward.backward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        TooFew.apply(a, a).sum().backward()
    with pytest.raises(RuntimeError, match=r"returned a gradient different than None at position 2, but the "
                                           r"corresponding forward input was not a Variable"):
        ForANumber.apply(a, 2.0).sum().backward()


def test_a_saved_tensor_changed_in_place_since_forward_is_refused():
    a = f64([0.5, 1.0])
    x = a * 1
    y = Legendre.apply(x)
    with mt.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*Legendre.*version 1; expected "
                                           r"version 0"):
        y.sum().backward()


def test_forward_must_return_tensors():
    class Number(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return 3.0

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match=r"Number\.forward must return a Tensor"):
        Number.apply(f64([1.0]))


def test_both_forms_give_the_same_gradient_and_the_engine_form_is_unchanged():
    class LegendreOp(mt.Function):   # the project's own form: instance methods on arrays
        def forward(self, x):
            self.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        def backward(self, g):
            x, = self.saved_tensors
            return g * 1.5 * (5 * x ** 2 - 1)

    a, b = f64(X), f64(X)
    Legendre.apply(a).sum().backward()
    LegendreOp.apply(b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-15)


def test_same_gradients_as_pytorch():
    torch = pytest.importorskip("torch")

    TorchLegendre = legendre_class(torch.autograd.Function)
    x, t = f64(X), torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (g,) = mt.grad((Legendre.apply(x) ** 2).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((TorchLegendre.apply(t) ** 2).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy(), rtol=1e-12)
    (h,) = mt.grad(g.sum(), x)
    (th,) = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12)


def test_a_computed_input_that_saved_nothing_and_several_outputs_of_one():
    """The inputs' graph nodes are ops here, not leaves, and ctx saved nothing: the gradients still reach the leaf."""
    class Double(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Halves(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 0.5, x * 0.25

        @staticmethod
        def backward(ctx, g_half, g_quarter):
            return g_half * 0.5 + g_quarter * 0.25

    a = f64([1.0, 2.0])
    Double.apply(a * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 6.0])
    a.grad = None
    half, _ = Halves.apply(a * 3)
    half.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.5, 1.5])


def test_a_forward_that_returns_one_output_in_a_tuple():
    """PyTorch's form allows `return (y,)`: one output, which gets its gradient as any other."""
    class Twice(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2,)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = f64([1.0, 2.0])
    y, = Twice.apply(a)
    (y * y).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [8.0, 16.0])
