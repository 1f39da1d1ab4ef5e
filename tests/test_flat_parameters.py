"""Flat parameter storage (nn/utils/flat.py): parameters and gradients as views of one buffer per dtype and device,
the fused update phase over them (zero_grad, clip_grad_norm_, SGD/Adam/AdamW, GradientSync), and what users see:
p.data, p.grad, model.to(), state dicts, checkpoints written before the buffers existed."""
import copy

import numpy as np
import pytest

import minitorch as mt
from conftest import requires_standin
from minitorch import backend, distributed, nn, optim
from minitorch.nn.utils import flat


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


def one_buffer(params):
    """The flat buffers holding params' data and gradients (asserting they are one each)."""
    groups = {id(p._flat): p._flat for p in params}
    assert len(groups) == 1
    return next(iter(groups.values()))


def test_parameters_and_gradients_are_views_of_one_buffer_allocated_once():
    model = fresh()
    values = by_name(model)
    opt = optim.Adam(model.parameters(), lr=0.01)
    group = one_buffer(model.parameters())
    assert group.size == sum(p.size for p in model.parameters()) and len(group.params) == 5   # tied weight once
    for k, v in by_name(model).items():   # flattening keeps the values
        np.testing.assert_array_equal(v, values[k])
    grads = []
    for _ in range(3):
        opt.zero_grad()
        loss_of(model).backward()
        opt.step()
        grads.append([p.grad.data for p in model.parameters() if p.grad is not None])
    for p in model.parameters():
        assert np.shares_memory(p.data, group.data)
    # the same gradient arrays, views of the one gradient buffer, at every step: nothing allocated per step
    assert all(a is b for a, b in zip(grads[0], grads[2])) and len(grads[0]) == 3
    assert all(np.shares_memory(g, group.grad) for g in grads[0])
    assert model.unused.weight.grad is None   # forward never uses it


def test_parameters_of_several_dtypes_get_one_buffer_each():
    a, b, c = (nn.Parameter(mt.ones(3, dtype=d)) for d in (np.float32, np.float64, np.float32))
    optim.SGD([a, b, c, a], lr=0.1)
    assert a._flat is c._flat is not b._flat and a._flat.dtype == np.float32 and b._flat.dtype == np.float64
    assert a._flat.size == 6


def test_assigning_data_and_grad_copies_values_in_or_fails_clearly():
    model = fresh()
    optim.SGD(model.parameters(), lr=0.1)
    w = model.hidden.weight
    view = w.data
    w.data = np.full(w.shape, 2.0)
    assert w.data is view and (w.numpy() == 2.0).all()
    w.grad = mt.full(w.shape, 3.0, dtype=np.float64)
    assert w.grad.data.base is not None and (w.grad.numpy() == 3.0).all()
    with pytest.raises(RuntimeError, match=r"shape \(6, 6\).*before making its optimizer"):
        w.data = np.zeros((2, 2))
    with pytest.raises(RuntimeError, match="dtype float32"):
        w.data = np.zeros(w.shape, dtype=np.float32)
    with pytest.raises(RuntimeError, match=r"gradient of a parameter of shape \(6, 6\)"):
        w.grad = mt.zeros(3, dtype=np.float64)


def test_load_state_dict_and_deepcopy_keep_working():
    model = fresh()
    optim.Adam(model.parameters())
    other = fresh(seed=1)
    model.load_state_dict(other.state_dict())
    assert by_name(model).keys() == by_name(other).keys()
    for k, v in by_name(other).items():
        np.testing.assert_array_equal(by_name(model)[k], v)
    twin = copy.deepcopy(model)
    assert all(p._flat is None for p in twin.parameters())   # a copy of its own
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


def test_parameters_without_a_gradient_are_skipped_and_count_their_own_steps():
    """PyTorch's semantics over one buffer: a parameter whose .grad is None is left alone (not even its moments
    change), and starts its bias correction at t = 1 when it first gets one."""
    rng = np.random.default_rng(0)
    params = [nn.Parameter(mt.tensor(rng.standard_normal(s), dtype=np.float64)) for s in [(3,), (2, 2), (4,)]]
    opt = optim.Adam(params, lr=0.01)
    plan = [[1, None, 1], [1, None, None], [1, 1, 1], [None, 1, 1]]   # which parameters get a gradient, per step
    steps = [[None if k is None else rng.standard_normal(p.shape) for k, p in zip(row, params)] for row in plan]
    expected = adam_reference(params, steps)
    for grads in steps:
        opt.zero_grad()
        for p, g in zip(params, grads):
            if g is not None:
                p.grad = mt.tensor(g, dtype=np.float64)
        opt.step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-12, atol=1e-15)
    assert [s["step"] for s in opt.state] == [3, 2, 3]


def test_zero_grad_is_one_fill_and_set_to_none_chooses_none_or_zeros():
    model = fresh()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    group = one_buffer(model.parameters())
    loss_of(model).backward()
    opt.zero_grad(set_to_none=False)
    assert (group.grad == 0).all()
    assert all(p.grad is not None and (p.grad.numpy() == 0).all() for p in model.parameters())
    loss_of(model).backward()
    model.zero_grad()
    assert (group.grad == 0).all() and all(p.grad is None for p in model.parameters())
    model.hidden.weight.grad = mt.ones(6, 6, dtype=np.float64)
    model.hidden.weight.grad = None   # one parameter alone: its slot goes back to zeros
    assert (group.grad == 0).all()


def test_clip_grad_norm_over_the_flat_buffer_matches_the_norm_of_all_gradients(device):
    model = fresh(device)
    optim.Adam(model.parameters())
    loss_of(model, device).backward()
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters() if p.grad is not None}
    norm = float(np.sqrt(sum((g * g).sum() for g in grads.values())))
    returned = nn.utils.clip_grad_norm_(model.parameters(), max_norm=norm / 4)
    assert returned.device == device
    np.testing.assert_allclose(returned.item(), norm, rtol=1e-12)
    for k, p in model.named_parameters():
        if k in grads:
            np.testing.assert_allclose(p.grad.numpy(), grads[k] * (norm / 4) / (norm + 1e-6), rtol=1e-12)


def test_buffers_larger_than_a_cpu_chunk_give_the_same_step_as_per_parameter_updates():
    """On the CPU the kernels run over CHUNK-sized pieces; the result is the elementwise update all the same."""
    rng = np.random.default_rng(1)
    shapes = [(flat.CHUNK + 5,), (3, flat.CHUNK // 2 + 1)]
    params = [nn.Parameter(mt.tensor(rng.standard_normal(s), dtype=np.float64)) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(2)]
    expected = adam_reference(params, grads)
    opt = optim.Adam(params, lr=0.01)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = mt.tensor(g, dtype=np.float64)
        opt.step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-12, atol=1e-15)


def test_model_to_a_device_after_the_optimizer_keeps_training_the_same(device):
    """model.to() moves the flat buffers (and the optimizer's state follows at its next step): the same weights as
    a model moved before its optimizer was made."""
    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            loss_of(model, model.hidden.weight.device).backward()
            opt.step()

    before = fresh(device)
    opt_before = optim.AdamW(before.parameters(), lr=0.01)
    train(before, opt_before, 4)

    after = fresh("cpu")
    opt_after = optim.AdamW(after.parameters(), lr=0.01)
    train(after, opt_after, 2)
    after.to(device)
    assert all(p.device == device for p in after.parameters()) and one_buffer(after.parameters()).device == device
    train(after, opt_after, 2)
    for k, v in by_name(before).items():
        np.testing.assert_allclose(by_name(after)[k], v, rtol=1e-12, atol=1e-15)


def test_moving_a_module_whose_buffer_holds_another_modules_parameters_is_a_clear_error():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    optim.SGD(a.parameters() + b.parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match="share a flat buffer with 2 parameter"):
        a.to("cpu")


def test_a_gradient_recorded_by_create_graph_is_used_by_the_step_by_its_value():
    p = nn.Parameter(mt.tensor([1.0, -2.0], dtype=np.float64))
    opt = optim.SGD([p], lr=0.1)
    (p * p * p).sum().backward(create_graph=True)
    assert p.grad.requires_grad   # kept as recorded, so it can be differentiated
    g = 3 * np.array([1.0, -2.0]) ** 2
    opt.step()
    np.testing.assert_allclose(p.numpy(), np.array([1.0, -2.0]) - 0.1 * g, rtol=1e-14)
    np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-14)


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
    opt = optim.Adam(model.parameters())
    world = TwinWorld()
    sync = distributed.GradientSync(model.parameters(), world)
    group = one_buffer(model.parameters())
    loss = loss_of(model)
    loss.backward()
    before = {k: p.grad.numpy().copy() for k, p in model.named_parameters() if p.grad is not None}
    grad_arrays = [p.grad.data for p in model.parameters() if p.grad is not None]
    extras = sync([loss.data, 1.0])
    assert world.calls == [group.size + 2]   # one collective: all gradients, the loss and the stop vote
    np.testing.assert_allclose(extras, [2 * loss.item(), 2.0], rtol=1e-14)
    assert all(a is b for a, b in zip(grad_arrays, [p.grad.data for p in model.parameters() if p.grad is not None]))
    for k, p in model.named_parameters():
        np.testing.assert_array_equal(p.grad.numpy(), 2 * before[k] if k in before else np.zeros(p.shape))
    opt.zero_grad()
    assert (group.grad == 0).all()


def test_a_checkpoint_in_the_per_parameter_format_resumes_exactly(tmp_path):
    """A last.npz as written before flat buffers existed (model and optimizer state by parameter, from NumPy arrays
    made here with Adam's rule) loads into a flat model and optimizer, which then continue as an uninterrupted run:
    continued weights == weights of running the written-out rule for all steps."""
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
    opt = optim.Adam(model.parameters(), lr=0.5)
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
    state = opt.state_dict()["state"]
    assert [s["step"] for s in state] == [5] * len(names)
    assert all(s["exp_avg"].shape == shapes[k] for s, k in zip(state, names))


@requires_standin
@pytest.mark.parametrize("n_layers", [2, 12])
def test_the_update_phase_launches_a_few_kernels_whatever_the_number_of_parameter_tensors(n_layers):
    """zero_grad + clip_grad_norm_ + Adam over flat buffers on the stand-in: one fill, a norm, a sqrt and a scale,
    one fused update (the stand-in counts what CuPy launches); per-parameter code would grow with the tensors."""
    import cupy
    mt.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(n_layers)]).to("cuda")
    opt = optim.AdamW(model.parameters(), lr=0.01)
    for _ in range(2):   # the second step: the optimizer's state exists
        opt.zero_grad()
        model(mt.randn(3, 4, device="cuda")).sum().backward()
        with cupy._standin.count_launches() as n:
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
    assert n.total <= 5, dict(n)


def test_an_optimizer_over_part_of_a_flat_buffer_updates_only_its_parameters():
    """A second optimizer over some parameters of a buffer (a GAN's, a fine-tuned head's) works on its runs of the
    buffer: the same weights as an optimizer over copies of those parameters alone."""
    model = fresh()
    optim.SGD(model.parameters(), lr=0.1)   # flattens the whole model
    reference = fresh()
    head = [model.embed.weight, model.hidden.bias]
    opt = optim.Adam(head, lr=0.01)
    opt_ref = optim.Adam([reference.embed.weight, reference.hidden.bias], lr=0.01)
    assert [(s.first, s.stop) for s in opt.spans] == [(0, 1), (2, 3)]
    hidden_before = model.hidden.weight.numpy().copy()
    for m, o in ((model, opt), (reference, opt_ref)):
        for _ in range(3):
            o.zero_grad()
            loss_of(m).backward()
            o.step()
    for k, v in by_name(reference).items():
        if k in ("embed.weight", "hidden.bias"):
            np.testing.assert_allclose(by_name(model)[k], v, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(model.hidden.weight.numpy(), hidden_before)


def test_plain_tensors_are_updated_and_summed_one_kernel_each():
    """Tensors that are not Parameters cannot be made views (their .data is theirs): the optimizer and GradientSync
    take them as they are, with the same update as flat parameters get."""
    rng = np.random.default_rng(3)
    plain = mt.tensor(rng.standard_normal(4), dtype=np.float64, requires_grad=True)
    param = nn.Parameter(mt.tensor(plain.numpy(), dtype=np.float64))
    opt = optim.Adam([plain, param], lr=0.01)
    sync = distributed.GradientSync([plain, param], TwinWorld())
    assert param._flat is not None and opt.plain == [plain]
    for _ in range(3):
        opt.zero_grad()
        (plain * plain * plain).sum().backward()
        (param * param * param).sum().backward()
        sync()
        np.testing.assert_array_equal(plain.grad.numpy(), param.grad.numpy())
        opt.step()
    np.testing.assert_array_equal(plain.numpy(), param.numpy())
    assert opt.state[0]["step"] == opt.state[1]["step"] == 3
    reloaded = optim.Adam([plain, param], lr=0.01)
    reloaded.load_state_dict(opt.state_dict())
    np.testing.assert_array_equal(reloaded.state[0]["exp_avg"], reloaded.state[1]["exp_avg"])
