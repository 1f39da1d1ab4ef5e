"""mt.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp): PyTorch's shapes and nesting, values against
central differences computed here (and against PyTorch where it is installed)."""
import math

import numpy as np
import pytest
from finite_differences import numeric_jacobian
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt
from minitorch.ops import array_ops as A
from minitorch.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

def _hessian(f, x, h=1e-4):
    """Second derivatives of a scalar f (array -> float) by central differences, shape x.shape + x.shape."""
    n = x.size
    H = np.zeros((n, n))
    flat = x.reshape(-1)
    for i in range(n):
        for j in range(n):
            def at(di, dj):
                v = flat.copy()
                v[i] += di
                v[j] += dj
                return f(v.reshape(x.shape))
            H[i, j] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    return H.reshape(x.shape + x.shape)


def f_mt(x):
    return (x.tanh() * x).sum(dim=-1) + x[..., :1].exp().squeeze(-1)


def f_np(x):
    return (np.tanh(x) * x).sum(axis=-1) + np.exp(x[..., 0])


def scalar_mt(x):
    return (x.sigmoid() * x * x).sum() + (x * x).sum().sqrt()


def scalar_np(x):
    return float((x * x / (1 + np.exp(-x))).sum() + np.sqrt((x * x).sum()))


def t64(a):
    return mt.tensor(a, dtype=mt.float64)


values = hnp.arrays(np.float64, st.sampled_from([(3,), (2, 3)]),
                    elements=st.floats(-2, 2).filter(lambda v: abs(v) > .1))


@settings(max_examples=15)
@given(values)
def test_jacobian_matches_central_differences_with_pytorchs_shape(x):
    J = jacobian(f_mt, t64(x))
    assert J.shape == x.shape[:-1] + x.shape and not J.requires_grad
    np.testing.assert_allclose(J.numpy(), numeric_jacobian(f_np, x), rtol=1e-6, atol=1e-8)


@settings(max_examples=10)
@given(values)
def test_hessian_matches_central_differences(x):
    H = hessian(scalar_mt, t64(x))
    assert H.shape == x.shape + x.shape
    np.testing.assert_allclose(H.numpy(), _hessian(scalar_np, x), rtol=1e-4, atol=1e-5)


@settings(max_examples=10)
@given(values, st.integers(0, 2 ** 31))
def test_vjp_jvp_hvp_vhp_are_the_products_with_the_numeric_matrices(x, seed):
    rng = np.random.default_rng(seed)
    J = numeric_jacobian(f_np, x)
    H = _hessian(scalar_np, x)
    u, v = rng.standard_normal(x.shape[:-1]), rng.standard_normal(x.shape)
    out, p = vjp(f_mt, t64(x), t64(u))
    np.testing.assert_allclose(out.numpy(), f_np(x), rtol=1e-12)
    np.testing.assert_allclose(p.numpy(), np.tensordot(u, J, axes=u.ndim), rtol=1e-6, atol=1e-8)
    out, p = jvp(f_mt, t64(x), t64(v))
    np.testing.assert_allclose(p.numpy(), np.tensordot(J, v, axes=v.ndim), rtol=1e-6, atol=1e-8)
    for fn in (hvp, vhp):
        out, p = fn(scalar_mt, t64(x), t64(v))
        assert out.shape == () and p.shape == x.shape
        np.testing.assert_allclose(p.numpy(), np.tensordot(H, v, axes=v.ndim), rtol=1e-4, atol=1e-5)


def test_several_inputs_and_outputs_nest_as_in_pytorch():
    a, b = t64([1.0, 2.0]), t64([[0.5, -1.0, 2.0]])

    def two_out(a, b):
        return a * 2, (a.reshape(2, 1) * b).sum(dim=0)

    J = jacobian(two_out, (a, b))
    assert [[t.shape for t in row] for row in J] == [[(2, 2), (2, 1, 3)], [(3, 2), (3, 1, 3)]]
    np.testing.assert_allclose(J[0][0].numpy(), 2 * np.eye(2))
    np.testing.assert_allclose(J[1][0].numpy(), np.tile(b.numpy(), (2, 1)).T)
    np.testing.assert_allclose(J[0][1].numpy(), np.zeros((2, 1, 3)))    # a * 2 does not use b: zeros
    assert isinstance(jacobian(lambda a, b: a * b.sum(), (a, b)), tuple)
    H = hessian(lambda a, b: (a * a).sum() * b.sum(), (a, b))
    assert [[t.shape for t in row] for row in H] == [[(2, 2), (2, 1, 3)], [(1, 3, 2), (1, 3, 1, 3)]]
    np.testing.assert_allclose(H[0][0].numpy(), 2 * b.numpy().sum() * np.eye(2))
    np.testing.assert_allclose(H[0][1].numpy(), np.broadcast_to(2 * a.numpy()[:, None, None], (2, 1, 3)))


def test_create_graph_keeps_the_result_differentiable():
    x = mt.tensor([0.3, -0.7], dtype=mt.float64, requires_grad=True)
    J = jacobian(lambda v: v.exp() * v, x, create_graph=True)      # diag((1 + x) e^x)
    J.sum().backward()                                               # d/dx of (1 + x) e^x = (2 + x) e^x
    np.testing.assert_allclose(x.grad.numpy(), (2 + x.numpy()) * np.exp(x.numpy()), rtol=1e-12)


def test_errors_name_the_function_and_the_argument():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="hessian: the function must return a Tensor with a single element"):
        hessian(lambda v: v * 2, x)
    with pytest.raises(RuntimeError, match="vjp: v can be None only when the output is a single one-element"):
        vjp(lambda v: v * 2, x)
    with pytest.raises(RuntimeError, match=r"jvp: v has shapes \[\(3,\)\] but the input has \[\(2,\)\]"):
        jvp(lambda v: v * 2, x, t64([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"strict=True"):
        jacobian(lambda v: t64([1.0]) * 1, x, strict=True)
    with pytest.raises(TypeError, match=r"jacobian: inputs\[0\] must be a Tensor"):
        jacobian(lambda v: v, [1.0])


def test_functional_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    from torch.autograd import functional as TF
    x = np.array([[0.4, -1.1, 0.8], [1.3, 0.2, -0.6]])
    J = TF.jacobian(lambda v: (v.tanh() * v).sum(-1) + v[..., 0].exp(), torch.tensor(x))
    np.testing.assert_allclose(jacobian(f_mt, t64(x)).numpy(), J.numpy(), rtol=1e-12)
    H = TF.hessian(lambda v: (v.sigmoid() * v * v).sum() + (v * v).sum().sqrt(), torch.tensor(x))
    np.testing.assert_allclose(hessian(scalar_mt, t64(x)).numpy(), H.numpy(), rtol=1e-10, atol=1e-12)


class Softplus(mt.Function):
    """A user's op written with array_ops, as docs/design.md shows: y = log(1 + exp(a)), dy/da = sigmoid(a)."""

    def forward(self, a):
        self.save_for_backward(a)
        return A.log(1 + A.exp(a))

    def backward(self, g):
        a, = self.saved_tensors
        return g * A.sigmoid(a)


class GaussCdf(mt.Function):
    """y = Phi(a) = (1 + erf(a / sqrt 2)) / 2, dy/da = exp(-a^2 / 2) / sqrt(2 pi): erf and exp from array_ops."""

    def forward(self, a):
        self.save_for_backward(a)
        return 0.5 * (1 + A.erf(a / np.sqrt(2)))

    def backward(self, g):
        a, = self.saved_tensors
        return g * A.exp(-0.5 * a * a) / np.sqrt(2 * np.pi)


class NumpyInBackward(mt.Function):
    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        out, = self.saved_tensors
        return g * np.exp(np.log(out))


@settings(max_examples=10)
@given(values)
def test_a_user_op_written_with_array_ops_is_twice_differentiable(x):
    erf = np.vectorize(math.erf)
    for op, f_np in ((Softplus, lambda v: float(np.log1p(np.exp(v)).sum())),
                     (GaussCdf, lambda v: float((0.5 * (1 + erf(v / np.sqrt(2)))).sum()))):
        H = hessian(lambda v: op.apply(v).sum(), t64(x))
        np.testing.assert_allclose(H.numpy(), _hessian(f_np, x), rtol=1e-4, atol=1e-5)


def test_a_backward_that_hands_a_tensor_to_numpy_gets_an_error_naming_the_op_and_what_to_use():
    x = mt.tensor([0.5, 1.0], dtype=mt.float64, requires_grad=True)
    y = NumpyInBackward.apply(x).sum()
    y.backward(retain_graph=True)                  # arrays on the fast path: fine
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.numpy()))
    with pytest.raises(RuntimeError, match=r"NumpyInBackward: create_graph=True: .*handed to NumPy.*"
                                           r"minitorch\.ops\.array_ops"):
        mt.grad(y, x, create_graph=True)


@settings(max_examples=10)
@given(values)
def test_array_ops_give_arrays_for_arrays_and_differentiable_tensors_for_tensors(x):
    """Each helper: on an array the NumPy value; on a Tensor the same value, and a gradient equal to central
    differences (so a backward written with them is right on both paths)."""
    erf = np.vectorize(math.erf)
    cases = {"exp": np.exp, "log": lambda v: np.log(np.abs(v) + 1), "sqrt": lambda v: np.sqrt(np.abs(v) + 1),
             "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "erf": erf, "abs": np.abs,
             "sum": lambda v: v.sum(-1), "mean": lambda v: v.mean(0), "max": lambda v: v.max(-1),
             "clip": lambda v: np.clip(v, -1, 1)}
    args = {"log": lambda v: A.abs(v) + 1, "sqrt": lambda v: A.abs(v) + 1}
    extra = {"sum": {"dim": -1}, "mean": {"dim": 0}, "max": {"dim": -1}}
    for name, f_np in cases.items():
        fn = getattr(A, name)

        def f(v, fn=fn, name=name):
            v = args.get(name, lambda u: u)(v)
            return fn(v, -1, 1) if name == "clip" else fn(v, **extra.get(name, {}))

        np.testing.assert_allclose(f(x), f_np(x), rtol=1e-12, err_msg=name)
        t = t64(x).requires_grad_()
        out = f(t)
        np.testing.assert_allclose(out.numpy(), f_np(x), rtol=1e-12, err_msg=name)
        out.sum().backward()
        kinks = {"max": (np.diff(np.sort(x, -1), axis=-1) < 1e-4).any(), "clip": (np.abs(np.abs(x) - 1) < 1e-4).any()}
        if kinks.get(name, False):   # a tie or a bound: no derivative for central differences to find
            continue
        np.testing.assert_allclose(t.grad.numpy(), numeric_jacobian(lambda v: f_np(v).sum(), x), rtol=1e-5,
                                   atol=1e-7, err_msg=name)


def test_the_package_exposes_functional_as_pytorch_does():
    assert mt.autograd.functional.jacobian is jacobian
    from minitorch.autograd.functional import hessian as imported
    assert imported is hessian
