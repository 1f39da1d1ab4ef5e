"""In-place safety (autograd/versions.py): an optimizer step or an in-place op between forward and backward makes the
backward of an op that saved the changed tensor raise PyTorch's error; what was not saved, or changed through .data,
does not."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import nn, optim


def leaf(values):
    return mt.tensor(values, dtype=mt.float64, requires_grad=True)


def test_an_optimizer_step_between_forward_and_backward_raises(device):
    w = nn.Parameter(mt.tensor([1.0, 2.0], dtype=mt.float64, device=device))
    opt = optim.SGD([w], lr=0.1)   # made first: making it moves w into a flat buffer (a graph before keeps the old)
    y = (w * w).sum()
    opt.step()   # w has no grad yet: the step changes nothing, but it writes: the version moves
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*Mul.*\(2,\).*version 1; expected "
                                           r"version 0.*Hint"):
        y.backward()


def test_a_product_or_quotient_keeps_only_what_its_backward_reads_as_in_pytorch():
    """d(w * 2)/dw = 2 and d(w / 2)/dw = 1/2 never read w, so a step on w between forward and backward is fine;
    w * x and 2 / w read w for the other side's gradient, so there it raises."""
    w = nn.Parameter(mt.tensor([1.0, 2.0], dtype=mt.float64))
    x = leaf([3.0, 4.0])
    opt = optim.SGD([w], lr=0.1)
    scaled, halved, times_x, inverse = (w * 2).sum(), (w / 2).sum(), (w * x).sum(), (2 / w).sum()
    opt.step()
    scaled.backward()
    halved.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.5, 2.5])
    with pytest.raises(RuntimeError, match=r"input 0 of Mul.*version 1; expected version 0"):
        times_x.backward()
    with pytest.raises(RuntimeError, match=r"input 1 of Div.*version 1; expected version 0"):
        inverse.backward()


def test_a_step_after_backward_is_fine_and_the_next_forward_sees_the_new_weights():
    w = nn.Parameter(mt.tensor([1.0, 2.0], dtype=mt.float64))
    opt = optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    opt.zero_grad()
    (w * w).sum().backward()    # a new graph, recorded after the step
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 0.0])


def test_a_linear_layer_and_a_product_with_a_view_of_the_weight_both_see_the_step():
    """F.linear saves the weight itself; x @ weight.T saves a view of it, which shares the weight's counter."""
    layer = nn.Linear(3, 2, dtype=mt.float64)
    x = mt.tensor(np.ones((4, 3)), dtype=mt.float64, requires_grad=True)
    for loss, op in ((layer(x).sum(), "Linear"), ((x @ layer.weight.T).sum(), "MatMul")):
        optim.Adam(layer.parameters()).step()
        with pytest.raises(RuntimeError, match=op):
            loss.backward()


def test_scaling_a_saved_output_in_place_raises_naming_the_op():
    x = leaf([0.5, 1.0, 1.5])
    y = x.exp()
    z = y.sum()          # Sum saves no array: the error comes from Exp, which saved y
    with mt.no_grad():
        y.mul_(2)
    assert y._version == 1
    with pytest.raises(RuntimeError, match=r"the output of Exp, a tensor of shape \(3,\) \(float64\), is at "
                                           r"version 1; expected version 0"):
        z.backward()


def test_a_saved_view_of_an_input_changed_in_place_raises_too():
    """A Function that saves x.T (a view of its input's memory) sees x's in-place change as PyTorch's error."""
    class TimesOwnTranspose(mt.Function):
        def forward(self, a):
            self.save_for_backward(a.T)
            return a @ a.T

        def backward(self, g):
            a_t, = self.saved_tensors
            return (g + g.T) @ a_t.T

    x = mt.tensor(np.arange(6.0).reshape(2, 3), dtype=mt.float64, requires_grad=True)
    a = x * 1.0            # not a leaf: an in-place change of it is allowed outside no_grad
    y = TimesOwnTranspose.apply(a).sum()
    with mt.no_grad():
        a.mul_(2)
    with pytest.raises(RuntimeError, match=r"input 0 of TimesOwnTranspose, a tensor of shape \(3, 2\) \(float64\), is "
                                           r"at version 1; expected version 0"):
        y.backward()


def test_detach_shares_the_counter():
    x = leaf([0.5, 1.0])
    y = x.exp()
    loss = y.sum()
    y.detach().add_(1.0)
    with pytest.raises(RuntimeError, match="Exp"):
        loss.backward()


def test_a_changed_tensor_that_no_op_saved_needs_no_error():
    """Add saves nothing: changing its input in place leaves its backward right (as in PyTorch)."""
    x = leaf([1.0, 2.0])
    c = mt.tensor([5.0, 6.0], dtype=mt.float64)
    loss = (x + c).sum()
    c.zero_()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_writes_through_data_are_the_escape_hatch():
    x = leaf([1.0, 2.0])
    loss = (x * x).sum()
    x.data *= 10                   # not counted: the gradient uses the new values, as documented
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])


def test_in_place_ops_compute_what_the_out_of_place_ones_do():
    a = np.array([[1.0, -2.0], [3.0, 4.0]])
    b = np.array([0.5, 2.0])
    for name, args, expected in [("add_", (mt.tensor(b),), a + b), ("sub_", (mt.tensor(b),), a - b),
                                 ("mul_", (3.0,), a * 3), ("div_", (mt.tensor(b),), a / b),
                                 ("fill_", (7.0,), np.full_like(a, 7.0)), ("zero_", (), np.zeros_like(a)),
                                 ("copy_", (mt.tensor(b),), np.broadcast_to(b, a.shape)),
                                 ("clamp_", (-1.0, 3.5), np.clip(a, -1.0, 3.5))]:
        t = mt.tensor(a, dtype=mt.float64)
        out = getattr(t, name)(*args)
        assert out is t and t._version == 1, name
        np.testing.assert_array_equal(t.numpy(), expected, err_msg=name)
    t = mt.tensor(a, dtype=mt.float64)
    t.add_(mt.tensor(b), alpha=-2)
    np.testing.assert_array_equal(t.numpy(), a - 2 * b)


def test_in_place_on_a_tensor_that_requires_grad_is_refused_outside_no_grad():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="add_: an in-place op on a leaf that requires grad"):
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="fill_: an in-place op on a leaf that requires grad"):
        x.fill_(0.0)      # (on a tensor in the graph in-place ops are recorded: the tests below)
    with mt.no_grad():
        x.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])
    with pytest.raises(ValueError, match=r"add_: an operand of shape \(3,\) cannot be broadcast to the tensor's "
                                         r"shape \(2,\)"):
        mt.zeros(2).add_(mt.zeros(3))


def test_views_share_the_counter_of_their_base_and_copies_do_not():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    for view in (x.reshape(3, 2), x.T, x[0], x.t()):
        assert view._version_counter is x._version_counter
    picked = x[mt.tensor([0, 0])]          # integer-array indexing copies
    assert picked._version_counter is not x._version_counter
    x.T.mul_(2)
    assert x._version == 1 and np.array_equal(x.numpy(), 2 * np.arange(6.0).reshape(2, 3))


def test_increment_version_takes_a_tensor_or_an_iterable():
    a, b = mt.zeros(2), mt.zeros(3)
    mt.autograd.increment_version(a)
    mt.autograd.increment_version([a, b])
    assert (a._version, b._version) == (2, 1)


def test_a_shared_counter_covers_every_tensor_that_holds_it():
    """Tensors that are views of one buffer may hold one counter (as a flat parameter buffer's views do)."""
    a, b = mt.zeros(2, dtype=mt.float64, requires_grad=True), mt.zeros(2, dtype=mt.float64, requires_grad=True)
    b._version_counter = a._version_counter
    loss = (b * b).sum()
    mt.autograd.increment_version(a)
    with pytest.raises(RuntimeError, match="Mul"):
        loss.backward()


def test_augmented_assignment_is_in_place_where_no_graph_is_recorded_as_in_pytorch():
    """The manual update `with no_grad(): w -= lr * w.grad` changes the parameter itself."""
    w = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    same = w
    (w * w).sum().backward()
    with mt.no_grad():
        w -= 0.25 * w.grad
        w *= 2
        w /= 4
        w += 1
    assert w is same and w._version == 4 and w.requires_grad
    np.testing.assert_allclose(w.numpy(), (np.array([1.0, 2.0]) * 0.5 * 2) / 4 + 1)
    with pytest.raises(RuntimeError, match="in-place op on a leaf that requires grad"):
        w += 1


def test_augmented_assignment_in_the_graph_is_recorded_in_place_with_the_right_gradient():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = x * 3
    before = y
    y += x * x                      # y = 3x + x^2, in place, as PyTorch: the same tensor, its memory changed
    assert y is before and np.array_equal(before.numpy(), [4.0, 10.0]) and y._version == 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 + 2 * x.numpy())


def test_an_in_place_op_that_cannot_keep_the_dtype_is_named():
    with pytest.raises(TypeError, match="add_: the result of dtype float64 cannot be written into this tensor of "
                                        "dtype int64"):
        mt.tensor([1, 2]).add_(0.5)


def test_in_place_on_a_read_only_view_and_from_a_host_array_on_a_device(device):
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only view"):
        mt.from_numpy(ro).add_(1.0)
    t = mt.zeros(3, device=device)
    t.copy_(np.array([1.0, 2.0, 3.0]))     # a host array enters the tensor's device first
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


# ----- in-place ops on tensors in the graph, recorded as PyTorch records them -----
def _inplace_cases(a, w):
    """(name, fn(a, w) -> a loss) for each recorded in-place op: a and w require grad; x = a * 1.5 is in the graph."""
    def use(change):
        def fn(a, w):
            x = a * 1.5
            before = x + 2               # recorded before the change: reads x's value then
            change(x, w)
            return (x * x).sum() + (before * w).sum()
        return fn
    return {
        "mul_ by a number": use(lambda x, w: x.mul_(3.0)),
        "mul_ by a tensor": use(lambda x, w: x.mul_(w)),
        "add_ with alpha": use(lambda x, w: x.add_(w, alpha=0.5)),
        "sub_": use(lambda x, w: x.sub_(w)),
        "div_": use(lambda x, w: x.div_(w)),
        "clamp_": use(lambda x, w: x.clamp_(min=1.6, max=2.9)),
        "x *= w twice": use(lambda x, w: (x.__imul__(w), x.__iadd__(1.0))),
        "zero_, then add_": use(lambda x, w: (x.zero_(), x.add_(w))),
        "fill_": use(lambda x, w: x.fill_(0.7)),
        "copy_": use(lambda x, w: x.copy_(w * w)),
    }


@pytest.mark.parametrize("name", list(_inplace_cases(None, None)))
def test_a_recorded_in_place_op_gives_the_gradient_of_finite_differences(name):
    rng = np.random.default_rng(0)
    a0, w0 = rng.uniform(0.5, 2.0, 4), rng.uniform(0.5, 2.0, 4)
    fn = _inplace_cases(None, None)[name]
    a, w = (mt.tensor(v, dtype=mt.float64, requires_grad=True) for v in (a0, w0))
    fn(a, w).backward()
    eps = 1e-6
    for leaf, value, other, first in ((a, a0, w0, True), (w, w0, a0, False)):
        numeric = np.zeros(4)
        for i in range(4):
            up, down = value.copy(), value.copy()
            up[i] += eps
            down[i] -= eps
            with mt.no_grad():
                f = [fn(*(mt.tensor(v, dtype=mt.float64), mt.tensor(other, dtype=mt.float64))[::1 if first else -1]
                           ).item() for v in (up, down)]
            numeric[i] = (f[0] - f[1]) / (2 * eps)
        np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("name", list(_inplace_cases(None, None)))
def test_a_recorded_in_place_op_gives_pytorchs_gradients(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    fn = _inplace_cases(None, None)[name]
    rng = np.random.default_rng(1)
    a0, w0 = rng.uniform(0.5, 2.0, 4), rng.uniform(0.5, 2.0, 4)
    a, w = (mt.tensor(v, dtype=mt.float64, requires_grad=True) for v in (a0, w0))
    fn(a, w).backward()
    ta, tw = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a0, w0))
    fn(ta, tw).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_recorded_in_place_op_is_differentiated_twice():
    a = mt.tensor([0.5, 1.5], dtype=mt.float64, requires_grad=True)
    x = a * a
    before = x * 2
    x.mul_(a)                                  # x = a^3 now; before = 2 a^2
    (g,) = mt.grad(x.sum() + before.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * a.numpy() ** 2 + 4 * a.numpy())
    (h,) = mt.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), 6 * a.numpy() + 4)


def test_an_op_that_saved_the_value_an_in_place_op_changed_refuses_to_backward():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    x = a * 1
    squared = x * x                            # saves x's memory
    x.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation: input 0 of Mul"):
        squared.sum().backward()


def test_a_view_made_before_an_in_place_change_is_refused_not_differentiated_wrongly():
    a = mt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x = a * 1
    view = x.reshape(2, 2)                     # shares x's memory, so it changes with x
    x.mul_(2)
    assert np.array_equal(view.numpy(), [[2.0, 4.0], [6.0, 8.0]])
    with pytest.raises(RuntimeError, match="a view made by Reshape of a tensor that an in-place op changed"):
        view.sum().backward()
    y = a * 1
    y.mul_(2)
    y.reshape(2, 2).sum().backward()           # a view made after the change is fine
    np.testing.assert_array_equal(a.grad.numpy(), [2.0] * 4)



def test_the_expected_version_is_the_one_forward_saw_however_many_changes_came_before_or_after():
    """The check finds the version a node saw from the changes logged after it (versions.version_at), as PyTorch
    names the version saved: changes before the forward do not count, several after it name the first's."""
    x, c = leaf([1.0, 2.0]), mt.tensor([3.0, 4.0], dtype=mt.float64)
    with mt.no_grad():
        c.add_(1.0)                       # version 1, before the forward
    y = (x * c).sum()                     # Mul saves c (a Constant in its parents) at version 1
    c.add_(1.0)
    c.mul_(2.0)                           # version 3
    with pytest.raises(RuntimeError, match=r"input 1 of Mul.*is at version 3; expected version 1 instead"):
        y.backward()
    z = (x * c).sum()                     # at version 3: nothing changed since, another tensor did
    mt.tensor([0.0]).add_(1.0)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 12.0])


def test_an_output_of_an_op_with_two_outputs_changed_in_place_raises_naming_it():
    """An op with two outputs that saves them: changing the second in place is caught through the version counter its
    node keeps for each output."""
    class SavesItsOutputs(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            y, z = a * 2.0, a * 3.0
            ctx.save_for_backward(y, z)
            return y, z

        @staticmethod
        def backward(ctx, gy, gz):
            y, z = ctx.saved_tensors
            return gy * (y / y) * 2.0 + gz * (z / z) * 3.0

    x = leaf([1.0, 2.0])
    y, z = SavesItsOutputs.apply(x)
    (y.sum() + z.sum()).backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])
    z.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"output 1 of SavesItsOutputsBackward.*version 1; expected version 0"):
        (y.sum() + z.sum()).backward()


def test_more_changes_than_a_counter_logs_still_raise_and_say_so():
    from minitorch.core.versions import LOG
    x, c = leaf([1.0, 2.0]), mt.tensor([3.0, 4.0], dtype=mt.float64)
    y = (x * c).sum()
    for _ in range(LOG + 4):
        c.add_(1.0)
    with pytest.raises(RuntimeError, match=rf"input 1 of Mul.*is at version {LOG + 4}; expected version at most 4 "):
        y.backward()


@pytest.mark.parametrize("change", ["mul_(y)", "mul_(y.detach())", "div_(y)"])
def test_an_in_place_op_that_reads_the_memory_it_writes_refuses_to_backward(change):
    """y.mul_(y): the op recorded for it saved y's memory as its input, and writing the result there changed it. As
    PyTorch: an error, not a gradient from the overwritten value (its own output, written there, is fine)."""
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1.0
    other = y.detach() if "detach" in change else y
    (y.mul_ if change.startswith("mul") else y.div_)(other)
    with pytest.raises(RuntimeError, match=r"input 1 of (Mul|Div).*version 1; expected version 0"):
        y.sum().backward()
    b = leaf([1.0, 2.0, 3.0])
    z = b * 1.0
    z.mul_(2.0)
    z.add_(1.0)
    z.sum().backward()                       # each op's own output, written in place, is at the version it wrote
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0, 2.0])
