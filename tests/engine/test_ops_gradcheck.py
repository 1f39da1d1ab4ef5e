"""Property-based first-order gradient checks of every entry of tests/op_table.py (each primitive op).

For each op, the table's strategy draws shapes (0-d tensors, size-1 axes, broadcastable pairs) and float64 values
kept away from the op's non-differentiable points. The test then checks, against the table's NumPy reference:
  - the value of the op,
  - the analytic vector-Jacobian product from backward(w) against central finite differences of
    L(x) = sum(w * f_numpy(x)) (tests/finite_differences.py: the code under test plays no part in them),
  - and separately that mt.gradcheck agrees.
"""
import numpy as np
import pytest
from conftest import away_from_zero, floats, shapes
from finite_differences import vjp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from op_table import OPS

import minitorch as mt
import minitorch.functional as F
from minitorch import ops

EPS = 1e-6              # central-difference step (float64)
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-6
VALUE_RTOL, VALUE_ATOL = 1e-10, 1e-12


def check_op(f_mt, f_np, inputs):
    """Value against NumPy, then backward(w) against central differences of the NumPy reference."""
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    out = f_mt(*leaves)
    expected = np.asarray(f_np(*[a.copy() for a in inputs]), dtype=np.float64)
    assert out.shape == expected.shape
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=VALUE_RTOL, atol=VALUE_ATOL)

    w = np.random.default_rng(0).standard_normal(expected.shape)
    out.backward(mt.tensor(w, dtype=np.float64))
    for i, (leaf, numeric) in enumerate(zip(leaves, vjp(f_np, inputs, w, EPS))):
        analytic = leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape)
        assert analytic.shape == leaf.shape, f"input {i}: gradient shape {analytic.shape} != {leaf.shape}"
        np.testing.assert_allclose(analytic, numeric, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"input {i}")


# ----- the tests -----
@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=30)
@given(data=st.data())
def test_value_and_gradient_match_finite_differences(name, data):
    """Value against f_np, backward(w) against central differences of sum(w * f_np)."""
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    check_op(lambda *xs: op.f_mt(*xs, **options), lambda *xs: op.f_np(*xs, **options), inputs)


@pytest.mark.parametrize("name", list(OPS))
@settings(max_examples=8)
@given(data=st.data())
def test_mt_gradcheck_agrees(name, data):
    op = OPS[name]
    inputs, options = data.draw(op.cases)
    # the padding row is read by the forward but treated as a constant (as in PyTorch): by design not a true gradient
    assume(options.get("padding_idx") is None)
    leaves = [mt.tensor(a, dtype=np.float64, requires_grad=True) for a in inputs]
    assert mt.gradcheck(lambda *xs: op.f_mt(*xs, **options), leaves, atol=1e-6, rtol=1e-5)


@settings(max_examples=30)
@given(shape=shapes(), p=floats(0.1, 0.7), seed=st.integers(0, 2 ** 16), data=st.data())
def test_dropout_value_and_gradient(shape, p, seed, data):
    """Dropout's mask is random: read it from one call, then check that a call with the same seed has the value and
    gradient of x * m / (1-p) (x has no zeros, so the output's zeros mark the dropped places)."""
    x = data.draw(away_from_zero(shape))
    mt.manual_seed(seed)
    mask = F.dropout(mt.tensor(x, dtype=np.float64), p).numpy() != 0
    mt.manual_seed(seed)
    check_op(lambda t: F.dropout(t, p), lambda x: x * mask / (1.0 - p), (x,))
    assert mt.gradcheck(lambda t: (mt.manual_seed(seed), F.dropout(t, p))[1],
                        [mt.tensor(x, dtype=np.float64, requires_grad=True)])


def test_max_ties_share_the_gradient():
    """Documented choice: tied maxima split the gradient equally (the average of the subgradients)."""
    x = mt.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 4.0, 4.5]], dtype=np.float64,
                  requires_grad=True)
    x.amax(dim=1).backward(mt.tensor([1.0, 1.0, 1.0], dtype=np.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25], [1, 0, 0, 0]])
    y = mt.tensor([4.0, 1.0, 4.0], requires_grad=True)
    y.max().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.0, 0.5])


def test_relu_and_abs_gradient_at_zero_is_zero():
    """At the kink the engine picks the subgradient 0 (as PyTorch does)."""
    for fn in (lambda t: t.relu(), lambda t: t.abs()):
        x = mt.tensor([0.0, 0.0], requires_grad=True)
        fn(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_relu_of_infinities_is_finite_where_numpy_maximum_is():
    """relu(-inf) is 0 and relu(inf) is inf (a * [a > 0] would give nan at -inf), and the gradient there is 0 / 1."""
    x = mt.tensor([-np.inf, np.inf, -1.0], requires_grad=True)
    y = x.relu()
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0.0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])


def test_every_design_op_is_covered():
    """DESIGN.md's 'Tensor methods and operators' plus F.relu/gelu/dropout/linear/embedding all appear above."""
    required = {"add", "sub", "mul", "div", "pow", "matmul", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
                "gelu", "abs", "sum", "mean", "max", "reshape", "view", "transpose", ".T", "permute", "unsqueeze",
                "squeeze", "getitem (basic)", "getitem (integer array, repeats)", "masked_fill", "where", "cat",
                "stack", "F.relu", "F.gelu", "F.linear", "F.embedding"}
    assert required <= set(OPS), required - set(OPS)
    print(f"\n{len(OPS)} op forms gradient-checked, plus F.dropout")


def _functions(module):
    return {v for v in vars(module).values() if isinstance(v, type) and issubclass(v, mt.Function)
            and v is not mt.Function}


def test_every_primitive_op_is_in_the_table():
    """Each Function class in minitorch.ops is some table entry's `function` (so all three op tests check it)."""
    missing = _functions(ops) - {op.function for op in OPS.values()}
    assert not missing, f"no entry in tests/op_table.py for {sorted(f.__name__ for f in missing)}"


class _SquareWithWrongBackward(mt.Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a

    def backward(self, g):
        a, = self.saved_tensors
        return g * a  # should be 2 a g


class _SquareWithWrongForward(mt.Function):
    def forward(self, a):
        self.save_for_backward(a)
        return a * a + 1e-6

    def backward(self, g):
        a, = self.saved_tensors
        return 2 * a * g


def test_the_checker_itself_catches_wrong_gradients_and_values():
    x = np.array([[0.5, -1.5], [2.0, 1.0]])
    check_op(lambda t: t * t, np.square, (x,))  # the right op passes
    with pytest.raises(AssertionError, match="input 0"):
        check_op(_SquareWithWrongBackward.apply, np.square, (x,))
    with pytest.raises(AssertionError):
        check_op(_SquareWithWrongForward.apply, np.square, (x,))
