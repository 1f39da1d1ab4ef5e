"""Tensor.register_hook and mt.autograd.detect_anomaly, as in PyTorch: the gradient a hook sees is checked against
central differences computed here, and against PyTorch where it is installed."""
import numpy as np
import pytest
from finite_differences import central_differences

import minitorch as mt


X = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]])
W = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])


def test_a_hook_on_an_intermediate_sees_the_gradient_of_the_loss_in_it():
    x = mt.tensor(X, dtype=mt.float64, requires_grad=True)
    y = x.tanh()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * y * mt.tensor(W, dtype=mt.float64)).sum().backward()
    (expected,) = central_differences(lambda v: float((v * v * W).sum()), [np.tanh(X)])   # L as a function of y
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], expected, rtol=1e-7, atol=1e-9)


def test_a_hook_on_a_leaf_runs_before_accumulation_and_its_result_replaces_the_gradient():
    x = mt.tensor(X, dtype=mt.float64, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    (x.exp() * mt.tensor(W, dtype=mt.float64)).sum().backward()
    (expected,) = central_differences(lambda v: float((np.exp(v) * W).sum()), [X])
    np.testing.assert_allclose(seen[0], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(x.grad.numpy(), 2 * expected, rtol=1e-7, atol=1e-9)


def test_a_replaced_gradient_flows_on_to_the_inputs():
    x = mt.tensor(X, dtype=mt.float64, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: mt.zeros_like(g))
    z = (y * y).sum() + x.sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones_like(X))   # only the x.sum() path is left


def test_hooks_run_in_mt_grad_and_under_create_graph():
    x = mt.tensor([0.5, -1.0], dtype=mt.float64, requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * 3)
    (gx,) = mt.grad(y.sum(), x, create_graph=True)          # 3 * 2x
    np.testing.assert_allclose(gx.numpy(), 6 * x.numpy())
    (gxx,) = mt.grad(gx.sum(), x)
    np.testing.assert_allclose(gxx.numpy(), [6.0, 6.0])


def test_remove_unregisters_and_bad_hooks_are_named():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    handle.remove()
    (x * x).sum().backward()
    assert calls == []
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.zeros(2).register_hook(lambda g: g)
    x.register_hook(lambda g: mt.zeros(3, dtype=mt.float64))
    with pytest.raises(RuntimeError, match=r"returned \(3,\) for a gradient of shape \(2,\)"):
        (x * x).sum().backward()


def test_detect_anomaly_names_the_op_whose_backward_gave_nan_and_where_its_forward_was_called():
    x = mt.tensor([0.0, 1.0], dtype=mt.float64, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"), mt.autograd.detect_anomaly():
        loss = (x.sqrt() * x).sum()      # d sqrt(x) at 0 is 0 / 0
        with pytest.raises(RuntimeError) as info:
            loss.backward()
    message = str(info.value)
    assert "Function Sqrt returned nan values in its gradient for input 0" in message
    assert "test_hooks_anomaly.py" in message and "loss = (x.sqrt() * x).sum()" in message


def test_without_anomaly_mode_nothing_is_recorded_or_checked():
    x = mt.tensor([0.0, 1.0], dtype=mt.float64, requires_grad=True)
    y = x.sqrt()
    assert not hasattr(y._op, "_forward_stack") and not mt.autograd.is_anomaly_enabled()
    with np.errstate(divide="ignore", invalid="ignore"):
        (y * x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_anomaly_mode_also_shows_the_forward_of_an_op_whose_input_was_changed_in_place():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    with mt.autograd.detect_anomaly():
        w = mt.tensor([3.0, 4.0], dtype=mt.float64)
        loss = (x * w).sum()
        w.mul_(2)
        with pytest.raises(RuntimeError, match=r"(?s)input 1 of Mul.*Traceback of the forward call of Mul.*"
                                               r"loss = \(x \* w\)\.sum\(\)"):
            loss.backward()


def test_hooks_and_anomaly_match_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    xt = torch.tensor(X, requires_grad=True)
    seen_t = []
    yt = xt.tanh()
    yt.register_hook(lambda g: seen_t.append(g.numpy().copy()))
    (yt * yt * torch.tensor(W)).sum().backward()
    x = mt.tensor(X, dtype=mt.float64, requires_grad=True)
    seen = []
    y = x.tanh()
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * y * mt.tensor(W, dtype=mt.float64)).sum().backward()
    np.testing.assert_allclose(seen[0], seen_t[0], rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_the_op_hook_and_anomaly_mode_are_per_thread_as_grad_mode_is():
    import threading
    seen = []

    def hook(op, phase, args, options):
        seen.append(threading.current_thread().name)
        return getattr(op, phase)(*args, **options)

    def other_thread():
        mt.ones(2) + 1
        seen.append(("anomaly", mt.autograd.is_anomaly_enabled(), "grad", mt.is_grad_enabled()))

    with mt.autograd.op_hook(hook), mt.autograd.detect_anomaly(), mt.no_grad():
        worker = threading.Thread(target=other_thread, name="other")
        worker.start()
        worker.join()
        mt.ones(2) + 1
    assert seen == [("anomaly", False, "grad", True), threading.current_thread().name]
