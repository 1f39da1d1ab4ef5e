"""Tensor creation, dtypes, conversion, comparisons, and clear errors for bad input (values and gradients of the ops
are in test_ops_gradcheck.py)."""
import numpy as np
import pytest

import minitorch as mt


# ----- creation and dtypes -----
@pytest.mark.parametrize("data, dtype", [([1.0, 2.0], np.float32), (np.array([1.0, 2.0]), np.float32),
                                         (1.5, np.float32),
                                         ([1, 2], np.int64), ([True, False], np.bool_), (np.int32(3), np.int32)])
def test_floats_become_float32_and_other_kinds_are_kept(data, dtype):
    t = mt.tensor(data)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


@pytest.mark.parametrize("dtype", [np.float64, "float64", mt.float64])
def test_dtype_argument_forms(dtype):
    assert mt.tensor([1.0], dtype=dtype).dtype == np.float64


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="unknown dtype"):
        mt.tensor([1.0], dtype="not-a-dtype")


def test_tensor_copies_and_from_numpy_shares():
    a = np.array([1.0, 2.0])
    t, s = mt.tensor(a), mt.from_numpy(a)
    a[0] = 9.0
    assert t.numpy()[0] == 1.0 and s.numpy()[0] == 9.0
    assert s.dtype == np.float64


def test_factories():
    assert mt.zeros(2, 3).shape == (2, 3) and mt.zeros((2, 3)).dtype == np.float32
    assert np.all(mt.ones(4, dtype=np.float64).numpy() == 1.0)
    assert np.all(mt.full((2, 2), 7.0).numpy() == 7.0)
    assert mt.arange(5).dtype == np.int64 and mt.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert mt.arange(1, 7, 2).tolist() == [1, 3, 5]
    x = mt.randn(3, 4)
    assert x.shape == (3, 4) and x.dtype == np.float32
    r = mt.rand(1000, dtype=np.float64)
    assert r.numpy().min() >= 0 and r.numpy().max() < 1
    assert mt.zeros_like(x).shape == x.shape and mt.ones_like(x, dtype=np.float64).dtype == np.float64
    assert mt.ones(2, requires_grad=True).requires_grad


def test_manual_seed_makes_random_tensors_repeatable():
    mt.manual_seed(123)
    a = mt.randn(5).numpy()
    mt.manual_seed(123)
    b = mt.randn(5).numpy()
    mt.manual_seed(124)
    c = mt.randn(5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_properties():
    x = mt.zeros(2, 3, 4)
    assert (x.shape, x.ndim, x.size(), x.numel(), len(x), x.device) == ((2, 3, 4), 3, (2, 3, 4), 24, 2, "cpu")
    assert x.is_leaf and not x.requires_grad and x.grad is None
    assert isinstance(x.data, np.ndarray)
    with pytest.raises(TypeError, match="0-d"):
        len(mt.tensor(1.0))


def test_item_and_bool():
    assert mt.tensor([[2.5]]).item() == 2.5
    with pytest.raises(ValueError, match=r"\(2,\)"):
        mt.tensor([1.0, 2.0]).item()
    assert bool(mt.tensor([3.0]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mt.tensor([1.0, 2.0]))


def test_conversions_and_their_gradients():
    x = mt.tensor([1.5, 2.5], requires_grad=True)
    y = x.double()
    assert y.dtype == np.float64 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 5.0])
    assert x.float() is x and x.to("cpu") is x
    assert mt.tensor([1.7, -2.2]).long().tolist() == [1, -2]
    assert x.to(dtype="float64").dtype == np.float64


def test_repr_mentions_values_dtype_and_grad():
    text = repr(mt.tensor([1.0, 2.0], requires_grad=True))
    assert "1." in text and "float32" in text and "requires_grad=True" in text


# ----- scalars keep the tensor's dtype -----
@pytest.mark.parametrize("number", [2.0, 2, np.float64(2.0), np.float32(2.0), np.int64(2)])
def test_numbers_on_either_side_keep_float32(number):
    x = mt.tensor([1.0, 2.0])
    for y in (x + number, number + x, x * number, number / x, x - number, x ** number, number ** x):
        assert y.dtype == np.float32


def test_mixed_float_dtypes_promote():
    assert (mt.tensor([1.0]) + mt.tensor([1.0], dtype=np.float64)).dtype == np.float64


# ----- comparisons and logic -----
def test_comparisons_give_bool_tensors_outside_the_graph():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result, expected in [(x < 2, [True, False, False]), (x <= 2, [True, True, False]),
                             (x > 2, [False, False, True]),
                             (x >= 2, [False, True, True]), (x == 2, [False, True, False]),
                             (x != 2, [True, False, True]), (x > mt.tensor([0.0, 5.0, 3.0]), [True, False, False])]:
        assert result.dtype == np.bool_ and not result.requires_grad
        assert result.tolist() == expected
    m = x > 1
    assert (~m).tolist() == [True, False, False]
    assert (m & (x < 3)).tolist() == [False, True, False] and (~m | (x > 2)).tolist() == [True, False, True]
    with pytest.raises(TypeError, match="bool"):
        ~x


def test_argmax():
    x = mt.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    assert x.argmax(dim=1).tolist() == [1, 0] and x.argmax().item() == 3


def test_masked_fill_with_minus_infinity_and_large_values():
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    mask = mt.tensor([True, False])
    y = x.masked_fill(mask, float("-inf"))
    assert y.numpy().tolist() == [[-np.inf, 2.0], [-np.inf, 4.0]]
    (x.masked_fill(mask, -1e9) * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 2.0], [0.0, 2.0]])


# ----- clear errors for bad input -----
@pytest.mark.parametrize("fn, error, pattern", [
    (lambda: mt.ones(2, 3) + mt.ones(4), ValueError, r"\(2, 3\) and \(4,\) cannot be broadcast"),
    (lambda: mt.ones(2, 3) * mt.ones(3, 2), ValueError, r"\(2, 3\) and \(3, 2\)"),
    (lambda: mt.ones(2, 3) @ mt.ones(4, 2), ValueError, r"matmul: shapes \(2, 3\) and \(4, 2\)"),
    (lambda: mt.ones(3) @ mt.tensor(2.0), ValueError, "matmul"),
    (lambda: mt.ones(2, 3).reshape(4, 2), ValueError, r"\(2, 3\).*\(4, 2\)"),
    (lambda: mt.ones(2, 3).sum(dim=2), IndexError, "dim 2 is out of range"),
    (lambda: mt.ones(2, 3).max(dim=-3), IndexError, "dim -3 is out of range"),
    (lambda: mt.ones(2, 3).mean(dim=(0, -2)), ValueError, "twice"),
    (lambda: mt.ones(2, 3).permute(1, 1), ValueError, "permutation"),
    (lambda: mt.ones(2, 3).permute(2, 0), ValueError, "permutation"),
    (lambda: mt.ones(2, 3).transpose(0, 2), IndexError, r"dim 2 is out of range.*\(2, 3\)"),
    (lambda: mt.ones(2, 3).unsqueeze(3), IndexError, r"dim 3 is out of range"),
    (lambda: mt.ones(2, 3)[5], IndexError, r"\(2, 3\)"),
    (lambda: mt.ones(2, 3).masked_fill(mt.ones(2, 3), 0.0), TypeError, "bool"),
    (lambda: mt.ones(2, 3).masked_fill(mt.tensor([True, False]), 0.0), ValueError, r"\(2,\).*\(2, 3\)"),
    (lambda: mt.ones(3).masked_fill(mt.ones(2, 3) > 0, 0.0), ValueError, r"\(2, 3\) does not broadcast.*\(3,\)"),
    (lambda: mt.where(mt.ones(2), mt.ones(2), mt.ones(2)), TypeError, "bool"),
    (lambda: mt.where(mt.tensor([True, False]), mt.ones(3), mt.ones(2)), ValueError, "cannot be broadcast"),
    (lambda: mt.cat([]), ValueError, "at least one"),
    (lambda: mt.cat([mt.ones(2, 3), mt.ones(3, 3)], dim=1), ValueError, "differ outside dim 1"),
    (lambda: mt.stack([]), ValueError, "at least one"),
    (lambda: mt.stack([mt.ones(2), mt.ones(3)]), ValueError, "same shape"),
    (lambda: mt.tensor([1, 2]).log(), TypeError, r"floating-point.*\.float\(\)"),
    (lambda: mt.tensor([1, 2]).exp(), TypeError, "floating-point"),
    (lambda: mt.zeros(2, device="tpu"), ValueError, "unknown device 'tpu'"),
])
def test_bad_input_raises_a_clear_error(fn, error, pattern):
    with pytest.raises(error, match=pattern):
        fn()


def test_integer_tensors_support_integer_arithmetic():
    a = mt.tensor([1, 2, 3])
    assert (a + 1).dtype == np.int64 and (a * a).tolist() == [1, 4, 9]
    assert (a - 3).abs().tolist() == [2, 1, 0] and (a * 2).sum().item() == 12
