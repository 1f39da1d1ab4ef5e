"""The idioms PyTorch's Basics tutorials open with: choosing a device, saving and loading a state dict, the NumPy
bridge, out=, an element's += and parameters() as a generator; each run the same way on PyTorch where it is
installed and compared."""
import numpy as np
import pytest

import minitorch as mt
from conftest import requires_gpu
from minitorch import nn

try:
    import torch
except ImportError:
    torch = None
LIBS = [mt] + ([torch] if torch is not None else [])
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: nothing to compare with")


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_the_device_line_of_the_tutorials_gives_a_device_that_factories_take(lib):
    device = lib.accelerator.current_accelerator().type if lib.accelerator.is_available() else "cpu"
    assert lib.backends.mps.is_available() in (False, True)
    x = lib.zeros(2, device=device)
    assert str(x.device).startswith(device) and lib.device(device).type == device
    assert (lib.accelerator.current_accelerator(check_available=True) is None) == (not lib.accelerator.is_available())


def test_mps_is_not_available_and_the_accelerator_is_cuda_when_there_is_one():
    assert mt.backends.mps.is_available() is False
    assert mt.accelerator.is_available() == mt.cuda.is_available()
    with pytest.raises(RuntimeError, match="mps"):
        mt.device("mps")


def test_a_device_keeps_its_gpu_index_so_another_gpu_is_refused():
    assert mt.device("cuda:1") == "cuda:1" == mt.device("cuda", 1) and mt.device("cuda", 1).index == 1
    assert mt.device("cuda:0") == "cuda" and mt.device("cuda").index == 0 and mt.device("cuda").type == "cuda"
    assert mt.device("cpu:0") == "cpu" and mt.device("cpu").index is None
    with pytest.raises(ValueError if mt.cuda.is_available() else RuntimeError):   # another GPU than the current one
        mt.zeros(1, device=mt.device("cuda", 1))
    assert mt.backend.check_device(None) == mt.get_default_device()


@requires_gpu
def test_set_default_device_moves_factories_and_layers():
    mt.set_default_device("cuda")
    try:
        assert mt.zeros(2).device == "cuda" and mt.tensor([1.0]).device == "cuda"
        assert nn.Linear(2, 3).weight.device == "cuda" and mt.randn(2).device == "cuda"
        assert mt.get_default_device() == "cuda"
    finally:
        mt.set_default_device("cpu")
    assert mt.zeros(2).device == "cpu"


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_save_and_load_a_state_dict_as_the_tutorials_do(lib, tmp_path):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    lib.save(model.state_dict(), tmp_path / "model.pth")
    other = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    other.load_state_dict(lib.load(tmp_path / "model.pth", weights_only=True))
    x = lib.ones(5, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    assert (tmp_path / "model.pth").exists()


def test_load_refuses_unpickling_and_names_a_file_that_is_not_minitorchs(tmp_path):
    mt.save({"w": mt.ones(2)}, tmp_path / "model.pth")
    with pytest.raises(ValueError, match="weights_only=False.*never unpickles"):
        mt.load(tmp_path / "model.pth", weights_only=False)
    (tmp_path / "notes.pth").write_text("not a model")
    with pytest.raises(ValueError, match="notes.pth"):
        mt.load(tmp_path / "notes.pth", weights_only=True)


@needs_torch
def test_a_file_pytorch_saved_is_refused_with_a_clear_error(tmp_path):
    torch.save(torch.nn.Linear(2, 2).state_dict(), tmp_path / "theirs.pth")
    with pytest.raises(ValueError, match="theirs.pth.*PyTorch's pickle format"):
        mt.load(tmp_path / "theirs.pth", weights_only=True)


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_numpy_bridge_shares_memory_both_ways(lib):
    t = lib.ones(5)
    n = t.numpy()
    t.add_(1)
    assert n.tolist() == [2.0] * 5
    n = np.ones(5)
    t = lib.from_numpy(n)
    np.add(n, 1, out=n)
    assert t.tolist() == [2.0] * 5 and str(t.dtype).endswith("float64")


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_an_indexed_element_takes_plus_equals(lib):
    vec, mat = lib.zeros(3), lib.zeros(2, 3)
    vec[1] += 1
    mat[1, 2] += 2
    mat[0] += 1
    assert vec.tolist() == [0.0, 1.0, 0.0] and mat.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 2.0]]


@needs_torch
@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "sin", "abs", "sqrt", "neg", "add", "mul", "sub",
                                  "div", "pow", "maximum", "matmul"])
def test_out_writes_into_the_given_tensor_as_pytorch(name):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 2.0, (2, 2)).astype(np.float32), rng.uniform(0.5, 2.0, (2, 2)).astype(np.float32)
    results = []
    for lib in (mt, torch):
        args = (lib.tensor(x),) if name in ("exp", "sigmoid", "tanh", "sin", "abs", "sqrt", "neg") else (
            lib.tensor(x), lib.tensor(y))
        out = lib.zeros(2, 2)
        returned = getattr(lib, name)(*args, out=out)
        assert returned is out
        results.append(out.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_out_is_refused_where_a_gradient_is_needed_or_the_shape_differs():
    w = mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        mt.exp(w, out=mt.zeros(2))
    with pytest.raises(RuntimeError, match="shape"):
        mt.exp(mt.ones(2), out=mt.zeros(3))
    with pytest.raises(RuntimeError, match="can't be cast"):
        mt.exp(mt.ones(2), out=mt.zeros(2, dtype="int64"))


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_tensor_matmul_and_parameters_as_a_generator(lib):
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert a.matmul(a).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    model = lib.nn.Linear(2, 3)
    first = next(model.parameters())
    assert tuple(first.shape) == (3, 2) and len(list(model.parameters())) == 2
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)   # a generator, consumed once
    assert len(optimizer.param_groups[0]["params"]) == 2


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_the_arithmetic_methods_of_the_tensors_tutorial(lib):
    t = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.mul(t).tolist() == (t * t).tolist() and t.div(2).tolist() == [[0.5, 1.0], [1.5, 2.0]]
    assert t.add(t, alpha=2).tolist() == [[3.0, 6.0], [9.0, 12.0]] and t.sub(1).tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_saving_a_whole_model_is_refused_with_the_state_dict_advice(tmp_path):
    with pytest.raises(TypeError, match=r"whole Linear .*state_dict\(\)"):
        mt.save(nn.Linear(2, 2), tmp_path / "model.pth")


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_the_legacy_constructors_of_the_nlp_tutorials(lib):
    target = lib.LongTensor([1, 0])
    assert str(target.dtype).endswith("int64") and target.tolist() == [1, 0]
    assert str(lib.FloatTensor([1, 2]).dtype).endswith("float32") and tuple(lib.FloatTensor(2, 3).shape) == (2, 3)
    assert str(lib.DoubleTensor([1.5]).dtype).endswith("float64") and str(lib.BoolTensor([1, 0]).dtype).endswith("bool")
