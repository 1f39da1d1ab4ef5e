"""mt.save / mt.load: .npz files without pickle, round trips of nested state, atomic writes, clear errors."""
import math
import os
import zipfile

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn


def test_nested_round_trip_keeps_values_dtypes_and_container_types(tmp_path):
    obj = {
        "weights": {"w": mt.tensor([[1.5, -2.0]]), "w64": mt.tensor([1e-300, 3.0], dtype=np.float64),
                    "ids": mt.tensor([3, 1, 4]), "mask": mt.tensor([True, False]), "scalar": mt.tensor(2.5)},
        "array": np.arange(6, dtype=np.int32).reshape(2, 3),
        "list": [1, 2.5, "three", None, True, [mt.ones(1)]],
        "tuple": (0.9, 0.98),
        "special": [math.inf, -math.inf],
        "text": "grüße",
        "empty": {},
    }
    mt.save(obj, tmp_path / "state.npz")
    back = mt.load(tmp_path / "state.npz")
    assert set(back) == set(obj)
    for key, t in obj["weights"].items():
        got = back["weights"][key]
        assert isinstance(got, mt.Tensor) and got.dtype == t.dtype and got.shape == t.shape
        np.testing.assert_array_equal(got.numpy(), t.numpy())
    assert isinstance(back["array"], np.ndarray) and back["array"].dtype == np.int32
    np.testing.assert_array_equal(back["array"], obj["array"])
    assert back["list"][:5] == [1, 2.5, "three", None, True] and isinstance(back["list"], list)
    assert type(back["list"][1]) is float and type(back["list"][0]) is int and back["list"][4] is True
    assert back["list"][5][0].tolist() == [1.0]
    assert back["tuple"] == (0.9, 0.98) and isinstance(back["tuple"], tuple)
    assert back["special"] == [math.inf, -math.inf]
    assert back["text"] == "grüße" and back["empty"] == {}


def test_nan_survives(tmp_path):
    mt.save({"x": math.nan, "t": mt.tensor([math.nan])}, tmp_path / "n.npz")
    back = mt.load(tmp_path / "n.npz")
    assert math.isnan(back["x"]) and np.isnan(back["t"].item())


def test_the_file_is_plain_npz_readable_without_pickle(tmp_path):
    mt.save({"a": mt.ones(2, 3), "b": {"c": [1, 2]}}, tmp_path / "s.npz")
    with zipfile.ZipFile(tmp_path / "s.npz") as z:
        assert all(name.endswith(".npy") for name in z.namelist())
    with np.load(tmp_path / "s.npz", allow_pickle=False) as data:  # raises if any entry needs pickle
        arrays = {k: data[k] for k in data.files}
    assert any(a.shape == (2, 3) for a in arrays.values())


def test_model_state_dict_round_trip(tmp_path):
    mt.manual_seed(0)
    a = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    mt.manual_seed(1)
    b = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    mt.save(a.state_dict(), tmp_path / "model.npz")
    b.load_state_dict(mt.load(tmp_path / "model.npz"))
    x = mt.randn(5, 3)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_load_onto_a_device(tmp_path, device):
    mt.save({"t": mt.tensor([1.0, 2.0], device=device)}, tmp_path / "d.npz")
    t = mt.load(tmp_path / "d.npz", device=device)["t"]
    assert t.device == device and t.tolist() == [1.0, 2.0]


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "ckpt"  # no suffix: the file is written exactly where asked
    mt.save({"v": 1}, path)
    mt.save({"v": 2}, str(path))
    assert mt.load(path)["v"] == 2
    assert os.listdir(tmp_path) == ["ckpt"]


def test_dicts_with_int_keys_round_trip(tmp_path):
    """An optimizer's state_dict names parameters by index, as PyTorch's does."""
    mt.save({"state": {0: {"step": 3}, 2: {"step": 1}}}, tmp_path / "o.npz")
    assert mt.load(tmp_path / "o.npz") == {"state": {0: {"step": 3}, 2: {"step": 1}}}


def test_a_failed_save_keeps_the_previous_file(tmp_path):
    path = tmp_path / "ckpt.npz"
    mt.save({"v": 1}, path)
    with pytest.raises(TypeError):
        mt.save({"v": 2, "bad": object()}, path)
    assert mt.load(path)["v"] == 1
    assert os.listdir(tmp_path) == ["ckpt.npz"]


@pytest.mark.parametrize("obj, pattern", [
    ({"a": 0, 1: mt.ones(1)}, r"keys must be strings \(or all ints\), got 1"),
    ({(1, 2): mt.ones(1)}, r"keys must be strings \(or all ints\), got \(1, 2\)"),
    ({"a": {"b": {1, 2}}}, "cannot store a set at /a/b"),
    ({"a": [1, lambda: 0]}, r"cannot store a function at /a\[1\]"),
    ({"a": np.array([object()])}, "object"),
])
def test_save_refuses_what_it_cannot_store(tmp_path, obj, pattern):
    with pytest.raises(TypeError, match=pattern):
        mt.save(obj, tmp_path / "x.npz")
    assert not os.listdir(tmp_path)


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        mt.load(tmp_path / "missing.npz")

    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip file")
    with pytest.raises(ValueError, match="garbage.npz"):
        mt.load(garbage)

    mt.save({"a": mt.ones(100)}, tmp_path / "full.npz")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes((tmp_path / "full.npz").read_bytes()[:200])
    with pytest.raises(ValueError, match="truncated.npz"):
        mt.load(truncated)

    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.ones(2))
    with pytest.raises(ValueError, match="plain.npz.*not a minitorch save file"):
        mt.load(plain)


def test_a_pickled_payload_is_refused_not_run(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, __structure__=np.frombuffer(b'{"format": "minitorch-npz-1", "root": {"__array__": 0}}', np.uint8),
             a0=np.array([{"payload": 1}], dtype=object))
    with pytest.raises(ValueError, match="evil.npz"):
        mt.load(path)


# ----- open file objects, as torch.save(obj, f) / torch.load(f) take them -----
def _round_trip_through_a_buffer(lib, state):
    """The tutorials' in-memory checkpoint, written once for either library."""
    import io
    buffer = io.BytesIO()
    lib.save(state, buffer)
    written = buffer.tell()
    buffer.seek(0)
    return lib.load(buffer, weights_only=True), written


def test_save_and_load_through_a_bytes_buffer_as_torch():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = mt.optim.Adam(model.parameters(), lr=0.1)
    model(mt.randn(2, 3)).sum().backward()
    opt.step()
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}
    back, written = _round_trip_through_a_buffer(mt, state)
    assert written > 0 and back["epoch"] == 3
    for k, v in state["model"].items():
        np.testing.assert_array_equal(back["model"][k].numpy(), v.numpy())
    np.testing.assert_array_equal(back["optim"]["state"][0]["exp_avg"], opt.state[0]["exp_avg"])
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    theirs, _ = _round_trip_through_a_buffer(torch, {"model": {k: torch.from_numpy(v.numpy()) for k, v in
                                                                state["model"].items()}, "epoch": 3})
    assert sorted(theirs["model"]) == sorted(back["model"]) and theirs["epoch"] == back["epoch"]
    for k, v in theirs["model"].items():
        np.testing.assert_array_equal(back["model"][k].numpy(), v.numpy())


def test_save_and_load_through_an_open_file(tmp_path):
    with open(tmp_path / "ckpt.pth", "wb") as f:
        mt.save({"w": mt.tensor([1.0, 2.0]), "n": 4}, f)
        assert not f.closed   # the caller's file stays open, as torch.save leaves it
    with open(tmp_path / "ckpt.pth", "rb") as f:
        back = mt.load(f, map_location="cpu")
        assert not f.closed
    assert back["w"].tolist() == [1.0, 2.0] and back["n"] == 4
    assert mt.load(tmp_path / "ckpt.pth")["n"] == 4   # the same bytes as a path gives


def test_load_from_a_stream_that_cannot_seek(tmp_path):
    import io
    buffer = io.BytesIO()
    mt.save({"t": mt.arange(3)}, buffer)

    class Stream(io.RawIOBase):   # a pipe or socket: read() only
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    assert mt.load(Stream(buffer.getvalue()))["t"].tolist() == [0, 1, 2]


def test_file_object_errors_name_the_file(tmp_path):
    with open(tmp_path / "text.pth", "w") as f, pytest.raises(TypeError, match="text.pth.*'wb'"):
        mt.save({"a": 1}, f)
    (tmp_path / "text.pth").write_bytes(b"not a zip")
    with open(tmp_path / "text.pth") as f, pytest.raises(TypeError, match="text.pth.*'rb'"):
        mt.load(f)
    with open(tmp_path / "text.pth", "rb") as f, pytest.raises(ValueError, match="text.pth: not a readable"):
        mt.load(f)
    import io
    with pytest.raises(ValueError, match="BytesIO"):
        mt.load(io.BytesIO(b"garbage"))
