"""Flat parameter storage (nn/utils/flat.py): FlatParameters, built by the caller, makes parameters and gradients
views of one buffer per dtype and device; the optimizer, clip_grad_norm_ and GradientSync given it work on whole
buffers (given plain parameters, per tensor), and what users see: p.data, p.grad, model.to(), state dicts,
checkpoints written before the buffers existed."""
import copy

import numpy as np
import pytest

import minitorch as mt
from conftest import requires_standin
from minitorch import backend, distributed, nn, optim
from minitorch.nn.utils import FlatParameters, flat


class Net(nn.Module):
    """Two Linears and an Embedding whose weight the output layer shares (tied), plus a layer that forward skips."""

    def __init__(self, d=6, vocab=5, dtype=np.float64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, dtype=dtype)
        self.hidden = nn.Linear(d, d, dtype=dtype)
        self.unused = nn.Linear(d, 2, dtype=dtype)
        self.out = nn.Linear(d, vocab, bias=False, dtype=dtype)
        self.out.weight = self.embed.weight

    def forward(self, ids):
        return self.out(self.hidden(self.embed(ids)).tanh())


IDS = np.array([[0, 3, 1], [4, 2, 2]])


def loss_of(model, device="cpu"):
    logits = model(backend.to_device(IDS, device))
    return (logits * logits).mean()


def fresh(device="cpu", seed=0):
    mt.manual_seed(seed)
    return Net().to(device)


def by_name(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def one_buffer(flat_params):
    """The one FlatBuffer of flat_params (asserting there is one)."""
    assert len(flat_params.buffers) == 1
    return flat_params.buffers[0]


def train(model, opt, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss_of(model, model.hidden.weight.device).backward()
        opt.step()


def test_parameters_and_gradients_are_views_of_one_buffer_allocated_once():
    model = fresh()
    values = by_name(model)
    fp = FlatParameters(model)
    opt = optim.Adam(fp, lr=0.01)
    group = one_buffer(fp)
    assert group.size == sum(p.numel() for p in model.parameters()) and len(group.params) == 5   # tied weight once
    for k, v in by_name(model).items():   # flattening keeps the values
        np.testing.assert_array_equal(v, values[k])
    grads = []
    for _ in range(3):
        opt.zero_grad()
        loss_of(model).backward()
        opt.step()
        grads.append([None if p.grad is None else p.grad.data for p in model.parameters()])
    for p in model.parameters():
        assert np.shares_memory(p.data, group.data)
    # the same gradient arrays, views of the one gradient buffer, at every step: nothing allocated per step
    assert all(a is b for a, b in zip(grads[0], grads[2]))
    assert all(np.shares_memory(g, group.grad) for g in grads[0] if g is not None)
    # one that backward never reaches keeps the None zero_grad left (and the optimizer skips it, as PyTorch does)
    assert model.unused.weight.grad is None and sum(g is None for g in grads[0]) == 2


def test_the_optimizer_and_gradient_sync_leave_plain_parameters_where_they_are():
    """Nothing is restructured in a constructor: given parameters, they work per tensor."""
    model = fresh()
    arrays = [p.data for p in model.parameters()]
    opt = optim.SGD(model.parameters(), lr=0.1)
    distributed.GradientSync(model.parameters(), TwinWorld())
    assert opt.flat is None and all(p.data is a for p, a in zip(model.parameters(), arrays))
    loss_of(model).backward()
    opt.step()
    assert all(p.data is a for p, a in zip(model.parameters(), arrays))


def test_parameters_of_several_dtypes_get_one_buffer_each():
    a, b, c = (nn.Parameter(mt.ones(3, dtype=d)) for d in (np.float32, np.float64, np.float32))
    fp = FlatParameters([a, b, c, a])
    assert [g.dtype for g in fp.buffers] == [np.float32, np.float64] and fp.buffers[0].size == 6
    assert np.shares_memory(a.data, c.data) is False or fp.buffers[0].params == [a, c]
    assert all(np.shares_memory(p.data, g.data) for g in fp.buffers for p in g.params)


def test_a_parameter_goes_into_one_flat_parameters_only():
    model = fresh()
    fp = FlatParameters(model)
    with pytest.raises(RuntimeError, match="in another FlatParameters already"):
        FlatParameters([model.hidden.weight])
    del fp   # (once it is gone, its parameters may go into another)
    FlatParameters([model.hidden.weight])


def test_assigned_data_and_grad_are_taken_back_at_the_next_step_or_fail_clearly():
    """The rule (nn/utils/flat.py): the buffers are the truth; settle() (run by step, clipping and the sum over
    ranks) copies reassigned values in and puts the views back; an array of another shape or dtype is refused."""
    model = fresh()
    fp = FlatParameters(model)
    opt = optim.SGD(fp, lr=0.0)
    w = model.hidden.weight
    view, slot = w.data, w.grad
    w.data = np.full(w.shape, 2.0)
    w.grad = mt.full(w.shape, 3.0, dtype=np.float64)
    opt.step()
    assert w.data is view and (w.numpy() == 2.0).all() and w.grad is slot and (slot.numpy() == 3.0).all()
    w.data = np.zeros((2, 2))
    with pytest.raises(RuntimeError, match=r"p.data of a flat parameter.*shape \(2, 2\).*shape \(6, 6\)"):
        opt.step()
    w.data = np.zeros(w.shape, dtype=np.float32)
    with pytest.raises(RuntimeError, match="dtype float32"):
        fp.settle()
    w.data = view
    w.grad = mt.zeros(3, dtype=np.float64)
    with pytest.raises(RuntimeError, match=r"p.grad of a flat parameter"):
        nn.utils.clip_grad_norm_(fp, 1.0)


def test_a_gradient_set_to_none_is_skipped_and_zero_grad_puts_the_slot_back():
    model = fresh()
    fp = FlatParameters(model)
    opt = optim.SGD(fp, lr=0.1)
    group = one_buffer(fp)
    loss_of(model).backward()
    w = model.hidden.weight
    before = w.numpy().copy()
    w.grad = None   # its slot still holds the gradient: the next settle zeroes it
    norm = nn.utils.clip_grad_norm_(fp, 1e9).item()
    others = [p.grad.numpy() for p in model.parameters() if p is not w]
    np.testing.assert_allclose(norm, np.sqrt(sum((g * g).sum() for g in others)), rtol=1e-12)
    opt.step()
    np.testing.assert_array_equal(w.numpy(), before)   # skipped, as PyTorch skips a None gradient
    fp.zero_grad()
    assert all(p.grad is None for p in model.parameters())   # no fill: the next backward hands over new arrays
    loss_of(model).backward()
    fp.settle()
    assert w.grad.data is group.grad_views[[id(p) for p in group.params].index(id(w))]


def test_load_state_dict_and_deepcopy_keep_working():
    model = fresh()
    fp = FlatParameters(model)
    opt = optim.SGD(fp, lr=0.0)
    other = fresh(seed=1)
    model.load_state_dict(other.state_dict())
    for k, v in by_name(other).items():
        np.testing.assert_array_equal(by_name(model)[k], v)
    opt.step()   # the loaded values go into the buffer
    assert all(np.shares_memory(p.data, fp.buffers[0].data) for p in model.parameters())
    for k, v in by_name(other).items():
        np.testing.assert_array_equal(by_name(model)[k], v)
    twin = copy.deepcopy(model)
    assert not any(np.shares_memory(p.data, fp.buffers[0].data) for p in twin.parameters())   # a copy of its own
    twin.hidden.weight.data[...] = 7.0
    assert not (model.hidden.weight.numpy() == 7.0).any()


def adam_reference(params, grads_per_step, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """Adam on NumPy copies, each parameter counting its own steps and skipped when its gradient is None."""
    ps = [p.numpy().copy() for p in params]
    m, v, t = [np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps], [0] * len(ps)
    for grads in grads_per_step:
        for i, g in enumerate(grads):
            if g is None:
                continue
            t[i] += 1
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            ps[i] = ps[i] - lr / (1 - b1 ** t[i]) * m[i] / (np.sqrt(v[i]) / np.sqrt(1 - b2 ** t[i]) + eps)
    return ps


@pytest.mark.parametrize("flat_storage", [True, False])
def test_parameters_without_a_gradient_are_skipped_and_count_their_own_steps(flat_storage):
    """PyTorch's semantics, per tensor and over one buffer: a parameter whose .grad is None is left alone (not even
    its moments change), and starts its bias correction at t = 1 when it first gets one."""
    rng = np.random.default_rng(0)
    params = [nn.Parameter(mt.tensor(rng.standard_normal(s), dtype=np.float64)) for s in [(3,), (2, 2), (4,)]]
    opt = optim.Adam(FlatParameters(params) if flat_storage else params, lr=0.01)
    plan = [[1, None, 1], [1, None, None], [1, 1, 1], [None, 1, 1]]   # which parameters get a gradient, per step
    steps = [[None if k is None else rng.standard_normal(p.shape) for k, p in zip(row, params)] for row in plan]
    expected = adam_reference(params, steps)
    for grads in steps:
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad = None if g is None else mt.tensor(g, dtype=np.float64)
        opt.step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-12, atol=1e-15)
    assert [s["step"] for s in opt.state] == [3, 2, 3]


def test_zero_grad_fills_nothing_and_settle_gathers_the_new_gradients_into_the_views():
    model, reference = fresh(), fresh()
    fp = FlatParameters(model)
    opt, opt_ref = optim.SGD(fp, lr=0.1, momentum=0.9), optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    group = one_buffer(fp)
    slots = [p.grad for p in model.parameters()]
    loss_of(model).backward()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    loss_of(model).backward()
    kept = {id(p): p.grad.data for p in model.parameters() if p.grad is not None}   # the arrays backward made
    fp.settle()
    for p in model.parameters():
        if id(p) in kept:   # their values now in the buffer, and .grad the slot again
            assert p.grad.data is not kept[id(p)] and np.shares_memory(p.grad.data, group.grad)
            np.testing.assert_array_equal(p.grad.numpy(), kept[id(p)])
    opt.zero_grad()
    train(reference, opt_ref, 1)
    loss_of(model).backward()
    opt.step()
    # model.zero_grad() sets .grad None: backward then makes new arrays, which the step copies into the buffer (a
    # .grad that backward does not reach stays None until the next FlatParameters.zero_grad())
    for m, o in ((model, opt), (reference, opt_ref)):
        m.zero_grad()
        loss_of(m).backward()
        o.step()
    assert all(p.grad is s for p, s in zip(model.parameters(), slots) if p is not model.unused.weight
               and p is not model.unused.bias) and model.unused.weight.grad is None
    for k, v in by_name(reference).items():
        np.testing.assert_allclose(by_name(model)[k], v, rtol=1e-13, atol=1e-15)


def test_clip_grad_norm_over_the_flat_buffer_matches_the_norm_of_all_gradients(device):
    model = fresh(device)
    fp = FlatParameters(model)
    loss_of(model, device).backward()
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
    norm = float(np.sqrt(sum((g * g).sum() for g in grads.values())))
    returned = nn.utils.clip_grad_norm_(fp, max_norm=norm / 4)
    assert returned.device == device
    np.testing.assert_allclose(returned.item(), norm, rtol=1e-12)
    for k, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[k] * (norm / 4) / (norm + 1e-6), rtol=1e-12)
    per_tensor = fresh(device)
    loss_of(per_tensor, device).backward()
    np.testing.assert_allclose(nn.utils.clip_grad_norm_(per_tensor.parameters(), norm / 4).item(), norm, rtol=1e-12)


def test_buffers_larger_than_a_cpu_chunk_give_the_same_step_as_per_parameter_updates():
    """On the CPU the kernels run over CHUNK-sized pieces; the result is the elementwise update all the same."""
    rng = np.random.default_rng(1)
    shapes = [(flat.CHUNK + 5,), (3, flat.CHUNK // 2 + 1)]
    params = [nn.Parameter(mt.tensor(rng.standard_normal(s), dtype=np.float64)) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(2)]
    expected = adam_reference(params, grads)
    opt = optim.Adam(FlatParameters(params), lr=0.01)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = mt.tensor(g, dtype=np.float64)
        opt.step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("how", ["flat.to", "model.to"])
def test_moving_to_a_device_after_the_optimizer_keeps_training_the_same(device, how):
    """FlatParameters.to() moves the buffers; model.to() moves the arrays, and the next settle moves the buffers
    after them; the optimizer's state follows at its next step: the same weights as a model moved first."""
    before = fresh(device)
    train(before, optim.AdamW(FlatParameters(before), lr=0.01), 4)

    after = fresh("cpu")
    fp = FlatParameters(after)
    opt = optim.AdamW(fp, lr=0.01)
    train(after, opt, 2)
    fp.to(device) if how == "flat.to" else after.to(device)
    assert all(p.device == device for p in after.parameters())
    train(after, opt, 2)
    assert one_buffer(fp).device == device and all(np.shares_memory(p.data, fp.buffers[0].data) if device == "cpu"
                                                   else True for p in after.parameters())
    for k, v in by_name(before).items():
        np.testing.assert_allclose(by_name(after)[k], v, rtol=1e-12, atol=1e-15)


def test_a_buffer_whose_parameters_went_to_several_devices_is_a_clear_error(monkeypatch):
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    fp = FlatParameters([*a.parameters(), *b.parameters()])
    a.weight.data = moved = a.weight.data.copy()   # what a move does: a new array (on "cuda", by the patch below)
    monkeypatch.setattr(backend, "device_of", lambda x: "cuda" if x is moved else "cpu")
    with pytest.raises(RuntimeError, match="one flat float32 buffer are now on \\['cpu', 'cuda'\\]"):
        fp.settle()


def test_a_gradient_recorded_by_create_graph_is_used_by_the_step_by_its_value():
    p = nn.Parameter(mt.tensor([1.0, -2.0], dtype=np.float64))
    opt = optim.SGD(FlatParameters([p]), lr=0.1)
    (p * p * p).sum().backward(create_graph=True)
    assert p.grad.requires_grad   # kept as recorded, so it can be differentiated
    g = 3 * np.array([1.0, -2.0]) ** 2
    opt.step()
    np.testing.assert_allclose(p.numpy(), np.array([1.0, -2.0]) - 0.1 * g, rtol=1e-14)
    np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-14)
    assert not p.grad.requires_grad and np.shares_memory(p.grad.data, opt.flat_buffers[0].grad)


class TwinWorld(distributed.World):
    """Two ranks whose gradients are equal, as seen from rank 0: every sum doubles its input; counts its calls."""
    size = 2

    def __init__(self):
        self.calls = []

    def allreduce_sum_(self, array):
        self.calls.append(array.size)
        array *= 2
        return array


def test_gradient_sync_sums_the_flat_buffer_in_place_with_the_extras_in_one_call():
    model = fresh()
    fp = FlatParameters(model)
    opt = optim.Adam(fp)
    world = TwinWorld()
    sync = distributed.GradientSync(fp, world)
    group = one_buffer(fp)
    loss = loss_of(model)
    loss.backward()
    before = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
    grad_arrays = [p.grad.data for p in model.parameters()]
    extras = sync([loss.data, 1.0])
    assert world.calls == [group.size + 2]   # one collective: all gradients, the loss and the stop vote
    np.testing.assert_allclose(extras, [2 * loss.item(), 2.0], rtol=1e-14)
    assert all(a is b for a, b in zip(grad_arrays, [p.grad.data for p in model.parameters()]))
    for k, p in model.named_parameters():
        np.testing.assert_array_equal(p.grad.numpy(), 2 * before[k])
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_gradient_sync_over_plain_parameters_sums_each_and_fills_missing_gradients():
    model = fresh()
    world = TwinWorld()
    sync = distributed.GradientSync(model.parameters(), world)
    loss_of(model).backward()
    before = {k: None if p.grad is None else p.grad.numpy().copy() for k, p in model.named_parameters()}
    extras = sync([1.0])
    assert len(world.calls) == len(before) + 1 and extras.tolist() == [2.0]
    for k, p in model.named_parameters():
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape) if before[k] is None else 2 * before[k])


@pytest.mark.parametrize("flat_storage", [True, False])
def test_a_checkpoint_in_the_per_parameter_format_resumes_exactly(tmp_path, flat_storage):
    """A last.npz as written before flat buffers existed (model and optimizer state by parameter, from NumPy arrays
    made here with Adam's rule) loads into a flat (or per-tensor) model and optimizer, which then continue as an
    uninterrupted run: continued weights == weights of running the written-out rule for all steps."""
    rng = np.random.default_rng(2)
    names = [k for k, _ in fresh().named_parameters()]
    start = by_name(fresh())
    shapes = {k: v.shape for k, v in start.items()}
    steps = [{k: rng.standard_normal(shapes[k]) for k in names} for _ in range(5)]
    lr, b1, b2, eps = 0.01, 0.9, 0.98, 1e-9
    p, m, v = dict(start), {k: np.zeros(shapes[k]) for k in names}, {k: np.zeros(shapes[k]) for k in names}

    def rule(t, grads):
        for k in names:
            g = grads[k]
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            p[k] = p[k] - lr / (1 - b1 ** t) * m[k] / (np.sqrt(v[k]) / np.sqrt(1 - b2 ** t) + eps)

    for t in (1, 2, 3):
        rule(t, steps[t - 1])
    saved = {"model": dict(p), "model_class": "Net",
             "optimizer": {"lr": lr, "step": 3, "hyper": {"betas": (b1, b2), "eps": eps, "weight_decay": 0.0},
                           "state": [{"step": 3, "exp_avg": m[k].copy(), "exp_avg_sq": v[k].copy()} for k in names]}}
    mt.save(saved, tmp_path / "last.npz")
    for t in (4, 5):
        rule(t, steps[t - 1])

    model = fresh(seed=7)
    opt = optim.Adam(FlatParameters(model) if flat_storage else model.parameters(), lr=0.5)
    loaded = mt.load(tmp_path / "last.npz")
    model.load_state_dict(loaded["model"])
    opt.load_state_dict(loaded["optimizer"])
    for grads in steps[3:]:
        opt.zero_grad()
        for k, q in model.named_parameters():
            q.grad = mt.tensor(grads[k], dtype=np.float64)
        opt.step()
    for k in names:
        np.testing.assert_allclose(by_name(model)[k], p[k], rtol=1e-12, atol=1e-15)
    # and what it saves again is per parameter, as before
    state = list(opt.state_dict()["state"].values())   # PyTorch's layout: {index: state}
    assert [s["step"] for s in state] == [5] * len(names)
    assert all(s["exp_avg"].shape == shapes[k] for s, k in zip(state, names))


def test_flat_and_per_tensor_optimizers_give_the_same_bits_and_exchange_their_state():
    """The same kernels over buffers or per tensor. (Not for a parameter that backward never reaches: over a
    FlatParameters its gradient is zeros, not None, so AdamW's decay moves it; Net's `unused` is left out.)"""
    model, reference = fresh(), fresh()
    opt, opt_ref = optim.AdamW(FlatParameters(model), lr=0.01), optim.AdamW(reference.parameters(), lr=0.01)
    train(model, opt, 3)
    train(reference, opt_ref, 3)
    for k, v in by_name(reference).items():
        if not k.startswith("unused"):
            np.testing.assert_array_equal(by_name(model)[k], v)
    swapped, swapped_ref = fresh(seed=3), fresh(seed=3)
    opt_s, opt_s_ref = optim.AdamW(swapped.parameters(), lr=0.01), optim.AdamW(FlatParameters(swapped_ref), lr=0.01)
    for m, o, source, source_opt in ((swapped, opt_s, model, opt), (swapped_ref, opt_s_ref, reference, opt_ref)):
        m.load_state_dict(source.state_dict())
        o.load_state_dict(source_opt.state_dict())
    for m, o in ((model, opt), (reference, opt_ref), (swapped, opt_s), (swapped_ref, opt_s_ref)):
        train(m, o, 2)
    for k, v in by_name(model).items():
        for other in (reference, swapped, swapped_ref):
            if not k.startswith("unused"):
                np.testing.assert_array_equal(by_name(other)[k], v)


@requires_standin
@pytest.mark.parametrize("n_layers", [2, 12])
def test_the_update_phase_launches_a_few_kernels_whatever_the_number_of_parameter_tensors(n_layers):
    """clip_grad_norm_ + Adam + zero_grad over flat buffers on the stand-in: the gradients gathered by one
    concatenation (CuPy copies more than 8 arrays in one kernel, fewer one each), a norm, a sqrt and a scale, one
    fused update, no fill (the stand-in counts what CuPy launches); per-parameter code would grow with the tensors."""
    import cupy
    mt.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(n_layers)]).to("cuda")
    fp = FlatParameters(model)
    opt = optim.AdamW(fp, lr=0.01)
    for _ in range(2):   # the second step: the optimizer's state exists
        opt.zero_grad()
        model(mt.randn(3, 4, device="cuda")).sum().backward()
        with cupy._standin.count_launches() as n:
            nn.utils.clip_grad_norm_(fp, 0.5)
            opt.step()
            opt.zero_grad()
    tensors = len(fp.params)
    assert n.total <= (5 if tensors > 8 else 4 + tensors), dict(n)


def test_an_optimizer_over_some_flat_parameters_updates_only_them():
    """A second optimizer over some parameters of a buffer (a GAN's, a fine-tuned head's), given them as a list,
    updates their views in place: the same weights as an optimizer over those parameters of a model not flat."""
    model = fresh()
    FlatParameters(model)
    reference = fresh()
    opt = optim.Adam([model.embed.weight, model.hidden.bias], lr=0.01)
    opt_ref = optim.Adam([reference.embed.weight, reference.hidden.bias], lr=0.01)
    hidden_before = model.hidden.weight.numpy().copy()
    for m, o in ((model, opt), (reference, opt_ref)):
        train(m, o, 3)
    for k, v in by_name(reference).items():
        if k in ("embed.weight", "hidden.bias"):
            np.testing.assert_allclose(by_name(model)[k], v, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(model.hidden.weight.numpy(), hidden_before)


def test_plain_tensors_can_be_flat_too():
    """Tensors that are not Parameters (leaves that require grad) are stored and updated like parameters."""
    rng = np.random.default_rng(3)
    plain = mt.tensor(rng.standard_normal(4), dtype=np.float64, requires_grad=True)
    param = nn.Parameter(mt.tensor(plain.numpy(), dtype=np.float64))
    fp = FlatParameters([plain, param])
    opt = optim.Adam(fp, lr=0.01)
    sync = distributed.GradientSync(fp, TwinWorld())
    for _ in range(3):
        opt.zero_grad()
        (plain * plain * plain).sum().backward()
        (param * param * param).sum().backward()
        sync()
        np.testing.assert_array_equal(plain.grad.numpy(), param.grad.numpy())
        opt.step()
    np.testing.assert_array_equal(plain.numpy(), param.numpy())
    assert opt.state[0]["step"] == opt.state[1]["step"] == 3 and np.shares_memory(plain.data, fp.buffers[0].data)
