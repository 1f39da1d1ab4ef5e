"""The meta device (minitorch/meta.py), held to PyTorch's: tensors with a shape and a dtype and no values, made by the
factories, .to("meta") and layers; ops, modules and backward on them give PyTorch's shapes and dtypes without memory,
and reading a value is refused with PyTorch's exception."""
import tracemalloc

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.meta import MetaArray

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def same_meta(ours, theirs):
    """ours and theirs are meta tensors of one shape and dtype (or tuples of them)."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same_meta(a, b)
        return
    assert theirs.device.type == "meta" and ours.device == "meta" and isinstance(ours.data, MetaArray)
    assert ours.shape == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs.dtype)


FACTORIES = {
    "zeros": lambda lib: lib.zeros(2, 3, device="meta"),
    "empty int64": lambda lib: lib.empty(4, dtype=lib.int64, device="meta"),
    "randn": lambda lib: lib.randn((2, 5), device="meta"),
    "rand float64": lambda lib: lib.rand(3, dtype=lib.float64, device="meta"),
    "ones": lambda lib: lib.ones(1, 2, device="meta"),
    "full": lambda lib: lib.full((2, 2), 7.0, device="meta"),
    "arange": lambda lib: lib.arange(5, device="meta"),
    "arange float": lambda lib: lib.arange(0, 2, 0.5, device="meta"),
    "arange on the cpu": lambda lib: lib.arange(0.0, 3.0).to("meta"),
    "randint": lambda lib: lib.randint(0, 5, (3, 2), device="meta"),
    "tensor": lambda lib: lib.tensor([[1, 2, 3]], device="meta"),
    "to meta": lambda lib: lib.tensor([1.0, 2.0]).to("meta"),
    "zeros_like": lambda lib: lib.zeros_like(lib.zeros(3, device="meta")),
    "randn_like": lambda lib: lib.randn_like(lib.zeros(3, 1, device="meta")),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_make_meta_tensors_as_pytorchs(name):
    same_meta(FACTORIES[name](mt), FACTORIES[name](torch))


def m(lib, *shape, dtype=None):
    return lib.randn(*shape, device="meta") if dtype is None else lib.zeros(*shape, dtype=dtype, device="meta")


PROGRAMS = {
    "arithmetic": lambda lib, f: (m(lib, 2, 3) * 2 + m(lib, 3)).exp().sqrt() / 3 - 1,
    "promotion": lambda lib, f: (m(lib, 2, dtype=lib.int64) + 1, m(lib, 2, dtype=lib.int64) * 1.5,
                                 m(lib, 2, dtype=lib.int64) / 2, m(lib, 2) > 0),
    "matmul": lambda lib, f: (m(lib, 4, 2, 3) @ m(lib, 3, 5), m(lib, 3) @ m(lib, 2, 3, 4), m(lib, 2, 3) @ m(lib, 3)),
    "reductions": lambda lib, f: (m(lib, 2, 3, 4).sum(), m(lib, 2, 3, 4).mean(1, keepdim=True),
                                  m(lib, 2, 3).amax(0), m(lib, 2, 3).argmax(1), *m(lib, 2, 3).max(1),
                                  *m(lib, 2, 3).min(0, keepdim=True), m(lib, 4).min()),
    "shapes": lambda lib, f: (m(lib, 2, 3, 4).permute(2, 0, 1), m(lib, 2, 3).T.reshape(-1), m(lib, 2, 3)[1:, None],
                              m(lib, 6).view(2, 3).transpose(0, 1).unsqueeze(0), m(lib, 1, 3, 1).squeeze(),
                              m(lib, 2, 3).flatten(), m(lib, 2, 1).expand(2, 5)),
    "join": lambda lib, f: (lib.cat([m(lib, 2, 3), m(lib, 2, 1)], 1), lib.stack([m(lib, 3), m(lib, 3)], 1),
                            lib.where(m(lib, 2, 3) > 0, m(lib, 2, 3), 0.0)),
    "index": lambda lib, f: (m(lib, 5, 3)[m(lib, 2, 4, dtype=lib.int64)],
                             m(lib, 4, 3)[lib.tensor([0, 2], device="meta")]),
    "softmax and losses": lambda lib, f: (f.softmax(m(lib, 2, 7), -1), f.log_softmax(m(lib, 2, 7), 1),
                                          f.cross_entropy(m(lib, 4, 7), m(lib, 4, dtype=lib.int64)),
                                          f.mse_loss(m(lib, 3), m(lib, 3))),
    "layers": lambda lib, f: (f.linear(m(lib, 2, 5, 3), m(lib, 4, 3), m(lib, 4)),
                              f.embedding(m(lib, 2, 6, dtype=lib.int64), m(lib, 10, 4)),
                              f.layer_norm(m(lib, 2, 3, 8), (8,), m(lib, 8), m(lib, 8)),
                              f.relu(m(lib, 2, 3)), f.gelu(m(lib, 4)), f.dropout(m(lib, 2, 3), 0.5)),
    "convolution": lambda lib, f: (f.conv2d(m(lib, 2, 3, 10, 10), m(lib, 5, 3, 3, 3), m(lib, 5), stride=2, padding=1),
                                   f.max_pool2d(m(lib, 1, 2, 9, 9), 2), f.avg_pool2d(m(lib, 3, 8, 8), 2, 2)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_ops_on_meta_tensors_give_pytorchs_shapes_and_dtypes(name):
    same_meta(PROGRAMS[name](mt, F), PROGRAMS[name](torch, TF))


def test_backward_on_meta_gives_meta_gradients_of_the_parameters_shapes():
    for lib, f in ((mt, F), (torch, TF)):
        w = lib.randn(4, 3, device="meta", requires_grad=True)
        x = lib.randn(5, 3, device="meta", requires_grad=True)
        loss = f.cross_entropy((x @ w.T).tanh(), lib.zeros(5, dtype=lib.int64, device="meta"))
        loss.backward()
        if lib is mt:
            ours = (loss, w.grad, x.grad)
        else:
            same_meta(ours, (loss, w.grad, x.grad))


def modules(lib, nn):
    """A small convolutional classifier with the layers the shape recipes use."""
    return nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 10))


@pytest.mark.parametrize("made", ["to", "device argument", "device context"])
def test_a_model_on_meta_gives_every_layers_output_shape_as_pytorchs(made):
    shapes = []
    for lib in (mt, torch):
        if made == "to":
            model = modules(lib, lib.nn).to("meta")
        elif made == "device context":
            with lib.device("meta"):
                model = modules(lib, lib.nn)
        else:
            model = lib.nn.Sequential(lib.nn.Conv2d(3, 6, 5, device="meta"), lib.nn.Flatten(),
                                      lib.nn.Linear(6 * 28 * 28, 10, device="meta"),
                                      lib.nn.LayerNorm(10, device="meta"))
        x = lib.randn(64, 3, 32, 32, device="meta")
        outputs = []
        for layer in model:
            x = layer(x)
            outputs.append(x)
        shapes.append(outputs)
        assert all(p.device == "meta" or getattr(p.device, "type", None) == "meta" for p in model.parameters())
    same_meta(*shapes)
    assert mt.get_default_device() == "cpu"   # the context restored it


def test_an_embedding_and_the_device_argument_of_layers():
    ours = mt.nn.Embedding(10, 4, device="meta")(mt.zeros(2, 5, dtype=mt.int64, device="meta"))
    same_meta(ours, torch.nn.Embedding(10, 4, device="meta")(torch.zeros(2, 5, dtype=torch.int64, device="meta")))
    assert mt.nn.Linear(3, 2, device="meta").weight.device == "meta"


READS = {
    "item": lambda lib: lib.zeros((), device="meta").item(),
    "float": lambda lib: float(lib.zeros(1, device="meta")),
    "int": lambda lib: int(lib.zeros(1, device="meta")),
    "bool": lambda lib: bool(lib.zeros(1, device="meta")),
    "numpy": lambda lib: lib.zeros(2, device="meta").numpy(),
    "tolist": lambda lib: lib.zeros(2, device="meta").tolist(),
    "cpu": lambda lib: lib.zeros(2, device="meta").cpu(),
    "to cpu": lambda lib: lib.zeros(2, device="meta").to("cpu"),
    "with a cpu tensor": lambda lib: lib.zeros(2, device="meta") + lib.zeros(2),
    "a bool mask": lambda lib: lib.zeros(2, device="meta")[lib.zeros(2, device="meta") > 0],
    "allclose": lambda lib: lib.allclose(lib.zeros(2, device="meta"), lib.zeros(2, device="meta")),
}


@pytest.mark.parametrize("name", list(READS))
def test_reading_values_of_a_meta_tensor_is_refused_as_pytorchs(name):
    def raised(lib):
        with pytest.raises(Exception) as error:
            READS[name](lib)
        return error.type
    assert raised(mt) is raised(torch)


def test_the_repr_says_meta_and_the_shape_as_pytorchs():
    ours, theirs = repr(mt.zeros(2, 3, device="meta")), repr(torch.zeros(2, 3, device="meta"))
    assert ours.startswith(theirs[:-1]) and "float32" in ours


def test_a_large_convolution_on_meta_allocates_nothing_of_its_size():
    x = mt.rand(1, 1, 10000, 10000, device="meta", requires_grad=True)   # 400 MB, were it real
    w = mt.rand(4, 1, 3, 3, device="meta", requires_grad=True)
    tracemalloc.start()
    try:
        y = F.max_pool2d(F.conv2d(x, w, padding=1).relu(), 2)
        y.sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert y.shape == (1, 4, 5000, 5000) and x.grad.shape == x.shape and w.grad.shape == w.shape
    assert peak < 1 << 20, f"{peak} bytes traced"


def test_an_integer_array_index_allocates_its_output_while_it_runs():
    weight = mt.zeros(8, 16, device="meta")
    ids = mt.zeros(1000, 500, dtype=mt.int64, device="meta")
    tracemalloc.start()
    try:
        out = F.embedding(ids, weight)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.shape == (1000, 500, 16) and isinstance(out.data, MetaArray)
    assert peak >= 1000 * 500 * 16 * 4 and out.data.nbytes == np.dtype(np.float32).itemsize * 1000 * 500 * 16
