"""Bad use of the engine gives a clear error: mismatched shapes name the op and both shapes, integer tensors where
floats are needed name the op and the dtype, and backward through a non-differentiable op names that op."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.functional as F


def a23():
    return mt.randn(2, 3, requires_grad=True)


@pytest.mark.parametrize("op, make", [
    ("Add", lambda a, b: a + b), ("Sub", lambda a, b: a - b), ("Mul", lambda a, b: a * b),
    ("Div", lambda a, b: a / b), ("Pow", lambda a, b: a ** b),
    ("<", lambda a, b: a < b), ("==", lambda a, b: a == b),
])
def test_binary_ops_on_shapes_that_do_not_broadcast_name_the_op_and_both_shapes(op, make):
    a, b = a23(), mt.randn(4).abs() + 1
    for x, y, first, second in ((a, b, "(2, 3)", "(4,)"), (a, np.ones(4), "(2, 3)", "(4,)"),
                                (a, [1.0, 2.0], "(2, 3)", "(2,)")):
        with pytest.raises(ValueError) as err:
            make(x, y)
        message = str(err.value)
        assert message.startswith(f"{op}:") and first in message and second in message, message


@pytest.mark.parametrize("make, parts", [
    (lambda: a23() @ mt.randn(4, 2), ("matmul", "(2, 3)", "(4, 2)")),
    (lambda: mt.randn(4, 5) @ a23(), ("matmul", "(4, 5)", "(2, 3)")),
    (lambda: a23() @ 2.0, ("matmul", "(2, 3)", "()")),
    (lambda: mt.where(mt.ones(2, 3) > 0, a23(), mt.randn(4)), ("where", "(2, 3)", "(4,)")),
    (lambda: mt.cat([a23(), mt.randn(3, 5)]), ("cat", "(2, 3)", "(3, 5)")),
    (lambda: mt.stack([a23(), mt.randn(3, 2)]), ("stack", "(2, 3)", "(3, 2)")),
    (lambda: a23().masked_fill(mt.tensor([True, False]), 0.0), ("masked_fill", "(2,)", "(2, 3)")),
    (lambda: a23().reshape(4, 2), ("reshape", "(2, 3)", "(4, 2)")),
    (lambda: F.linear(a23(), mt.randn(4, 5)), ("linear", "(2, 3)", "(4, 5)")),
    (lambda: F.layer_norm(a23(), 4), ("layer_norm", "(4,)", "(2, 3)")),
    (lambda: F.cross_entropy(a23(), mt.tensor([0, 1, 2])), ("cross_entropy", "(2, 3)", "(3,)")),
    (lambda: F.scaled_dot_product_attention(mt.randn(2, 3, 4), mt.randn(2, 5, 3), mt.randn(2, 5, 4)),
     ("scaled_dot_product_attention", "(2, 3, 4)", "(2, 5, 3)")),
    (lambda: (a23() * 2).backward(mt.ones(3, 2)), ("backward", "(3, 2)", "(2, 3)")),
])
def test_other_ops_on_mismatched_shapes_name_the_op_and_both_shapes(make, parts):
    with pytest.raises(ValueError) as err:
        make()
    assert all(p in str(err.value) for p in parts), str(err.value)


@pytest.mark.parametrize("op, make", [
    ("Exp", lambda i: i.exp()), ("Log", lambda i: i.log()), ("Sqrt", lambda i: i.sqrt()),
    ("Tanh", lambda i: i.tanh()), ("Sigmoid", lambda i: i.sigmoid()), ("Gelu", lambda i: i.gelu()),
    ("Dropout", lambda i: F.dropout(i, 0.5)),
    ("Softmax", lambda i: F.softmax(i, -1)), ("LogSoftmax", lambda i: F.log_softmax(i, -1)),
    ("LayerNorm", lambda i: F.layer_norm(i, 3)), ("CrossEntropy", lambda i: F.cross_entropy(i, mt.tensor([0, 1]))),
    ("matmul", lambda i: i @ mt.randn(3, 2)), ("matmul", lambda i: mt.randn(4, 2) @ i),
])
def test_integer_tensors_where_floats_are_needed_are_a_clear_type_error(op, make):
    ints = mt.tensor([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(TypeError) as err:
        make(ints)
    message = str(err.value)
    assert message.startswith(op) and "int64" in message and ".float()" in message, message


def test_integer_tensors_cannot_require_grad_and_integer_targets_must_be_integers():
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients, got dtype int64"):
        mt.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="target must hold integer class ids, got dtype float32"):
        F.cross_entropy(a23(), mt.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="ids must be integers, got dtype float32"):
        F.embedding(mt.randn(2), mt.randn(5, 3))
    ok = mt.tensor([[1, 2]]) @ mt.tensor([[3], [4]])   # integer @ integer stays allowed
    assert ok.dtype.kind == "i" and ok.item() == 11


@pytest.mark.parametrize("op, make", [
    ("a comparison (>)", lambda x: (x > 0).sum()),
    ("a comparison (>)", lambda x: ((x > 0).float() * 2.0).sum()),   # the name survives later ops
    ("a comparison (==)", lambda x: mt.where(x == x.max(), 1.0, 0.0).sum()),
    ("argmax", lambda x: x.argmax().float()),
    ("long()", lambda x: x.long().sum().float()),
    ("detach()", lambda x: (x.detach() * 3.0).sum()),
])
def test_backward_through_a_non_differentiable_op_names_that_op(op, make):
    x = mt.randn(4, requires_grad=True)
    y = make(x)
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert f"computed through {op}" in str(err.value) and "no gradient" in str(err.value), str(err.value)
    assert x.grad is None


def test_backward_without_any_gradient_path_keeps_the_general_message():
    with pytest.raises(RuntimeError, match="no input had requires_grad=True, or it was computed under no_grad"):
        mt.randn(3).sum().backward()
    x = mt.randn(3, requires_grad=True)
    with mt.no_grad():
        y = (x > 0).float().sum()
    with pytest.raises(RuntimeError, match="computed under no_grad"):
        y.backward()


def test_a_gradient_through_a_constant_branch_still_reaches_the_differentiable_one():
    x = mt.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    ((x > 0).float() * x).sum().backward()     # the mask is a constant; d/dx = mask
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0])


def test_matmul_with_a_list_uses_the_tensors_float_dtype():
    x = mt.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x @ [[1.0], [0.5], [2.0]]
    assert y.dtype == np.float32 and y.item() == pytest.approx(8.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 0.5, 2.0]])
