"""save/load of nested dicts, lists and tuples of tensors, arrays and plain values, as .npz without pickle.

The file holds one array per tensor or array ('a0', 'a1', ...) and a JSON description of the structure
('__structure__'), so loading reads numbers and text only and can never execute code from the file.
"""
import json
import os
import tempfile
import zipfile

import numpy as np

from . import backend
from .tensor import Tensor

_FORMAT = "minitorch-npz-1"


def _encode(obj, arrays, where):
    if isinstance(obj, Tensor) or backend.is_array(obj):
        array = obj.numpy() if isinstance(obj, Tensor) else backend.to_numpy(obj)
        if array.dtype.hasobject:  # NumPy would pickle it, and load() refuses pickles
            raise TypeError(f"save: cannot store an array of Python objects at {where or 'the top'}")
        arrays.append(array)
        return {"__tensor__" if isinstance(obj, Tensor) else "__array__": len(arrays) - 1}
    if isinstance(obj, dict) and obj and all(isinstance(k, int) and not isinstance(k, bool) for k in obj):
        # (an optimizer's state_dict, PyTorch's layout: parameters by index)
        return {"__intdict__": [[k, _encode(v, arrays, f"{where}/{k}")] for k, v in obj.items()]}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"save: dict keys must be strings (or all ints), got {k!r} at {where or 'the top'}")
        return {"__dict__": {k: _encode(v, arrays, f"{where}/{k}") for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        kind = "__list__" if isinstance(obj, list) else "__tuple__"
        return {kind: [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if callable(getattr(obj, "state_dict", None)):   # torch.save(model, path) pickles the code; here no pickle
        raise TypeError(f"save: cannot store a whole {type(obj).__name__} (that would pickle its code); save its "
                        f"weights: save({'obj' if not where else where}.state_dict(), path), and load them into a "
                        f"new {type(obj).__name__} with load_state_dict(load(path, weights_only=True))")
    raise TypeError(f"save: cannot store a {type(obj).__name__} at {where or 'the top'}; "
                    f"use tensors, arrays, dicts, lists, tuples, numbers, strings, None")


def _decode(node, arrays, device):
    if isinstance(node, dict):
        if "__tensor__" in node:
            return Tensor._make(backend.to_device(arrays[f"a{node['__tensor__']}"], device))
        if "__array__" in node:
            return arrays[f"a{node['__array__']}"]
        if "__dict__" in node:
            return {k: _decode(v, arrays, device) for k, v in node["__dict__"].items()}
        if "__intdict__" in node:
            return {int(k): _decode(v, arrays, device) for k, v in node["__intdict__"]}
        if "__list__" in node:
            return [_decode(v, arrays, device) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_decode(v, arrays, device) for v in node["__tuple__"])
        raise ValueError(f"unknown node {sorted(node)} in the file's structure")
    return node


def save(obj, path):
    """Write obj to path (.npz) atomically: a temporary file in the same folder, then a rename."""
    arrays = []
    structure = _encode(obj, arrays, "")
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload["__structure__"] = np.frombuffer(json.dumps({"format": _FORMAT, "root": structure}).encode(), np.uint8)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private (0600); give it the permissions of a normal file
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load(path, device="cpu", *, map_location=None, weights_only=True):
    """Read what save() wrote; tensors are placed on device (or map_location, PyTorch's name). Raises ValueError
    naming the file if it is damaged or not minitorch's. The file is only ever read as numbers and text: PyTorch's
    weights_only=True is the one mode, and weights_only=False (unpickling code) is refused."""
    if not weights_only:
        raise ValueError(f"load({os.fspath(path)!r}, weights_only=False): minitorch never unpickles a file (that could "
                         f"run code from it); its files hold tensors, numbers and text only: use weights_only=True")
    device = str(map_location) if map_location is not None else device
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise ValueError(f"{path}: not a readable minitorch .npz file (truncated or corrupt?): {e}") from None
    if "__structure__" not in arrays:
        pickled = any(k.endswith(".pkl") or k.endswith("/data") for k in arrays)
        raise ValueError(f"{path}: not a minitorch save file (no __structure__ entry)" + (
            "; it looks like PyTorch's pickle format, which minitorch does not read: save the state dict with "
            "minitorch.save, or convert each tensor with .numpy()" if pickled else ""))
    try:
        meta = json.loads(arrays.pop("__structure__").tobytes().decode())
        if meta.get("format") != _FORMAT:
            raise ValueError(f"unknown format {meta.get('format')!r}")
        return _decode(meta["root"], arrays, backend.check_device(device))
    except (ValueError, KeyError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: damaged minitorch save file: {e}") from None
