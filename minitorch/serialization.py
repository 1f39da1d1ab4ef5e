"""save/load of nested dicts, lists and tuples of tensors, arrays and plain values, as .npz without pickle.

The file holds one array per tensor or array ('a0', 'a1', ...) and a JSON description of the structure
('__structure__'), so loading reads numbers and text only and can never execute code from the file.
"""
import io
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


def _is_file(f):
    """An open file object (io.BytesIO, open(path, "wb")) rather than a path."""
    return hasattr(f, "write") or hasattr(f, "read")


def _name(f):
    """A path, or the name of an open file (for the errors)."""
    return os.fspath(f) if not _is_file(f) else str(getattr(f, "name", f"<{type(f).__name__}>"))


def save(obj, f):
    """Write obj to f, a path (.npz, written atomically: a temporary file in the same folder, then a rename) or a
    file object opened for binary writing (io.BytesIO, open(path, "wb")), written from its current position."""
    arrays = []
    structure = _encode(obj, arrays, "")
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload["__structure__"] = np.frombuffer(json.dumps({"format": _FORMAT, "root": structure}).encode(), np.uint8)
    if _is_file(f):
        if not hasattr(f, "write"):
            raise TypeError(f"save: the file object {_name(f)} has no write(): open it for writing ('wb')")
        if "b" not in getattr(f, "mode", "b"):
            raise TypeError(f"save: the file {_name(f)} is open in text mode {f.mode!r}: open it with 'wb'")
        np.savez(f, **payload)
        return
    path = os.fspath(f)
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


def load(f, device="cpu", *, map_location=None, weights_only=True):
    """Read what save() wrote, from a path or a file object opened for binary reading (from its current position);
    tensors are placed on device (or map_location, PyTorch's name). Raises ValueError naming the file if it is
    damaged or not minitorch's. The file is only ever read as numbers and text: PyTorch's weights_only=True is the one
    mode, and weights_only=False (unpickling code) is refused."""
    path = _name(f)
    if not weights_only:
        raise ValueError(f"load({path!r}, weights_only=False): minitorch never unpickles a file (that could "
                         f"run code from it); its files hold tensors, numbers and text only: use weights_only=True")
    device = str(map_location) if map_location is not None else device
    if _is_file(f):
        if not hasattr(f, "read"):
            raise TypeError(f"load: the file object {path} has no read(): open it for reading ('rb')")
        if "b" not in getattr(f, "mode", "b"):
            raise TypeError(f"load: the file {path} is open in text mode {f.mode!r}: open it with 'rb'")
        if not (hasattr(f, "seekable") and f.seekable()):   # (a zip is read from its end: a stream is read whole)
            f = io.BytesIO(f.read())
    elif not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    else:
        f = path
    try:
        with np.load(f, allow_pickle=False) as data:
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
