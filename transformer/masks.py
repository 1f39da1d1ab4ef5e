"""Token id batches as the models take them: checked integer arrays, and the attention masks built from them.

Masks are bool arrays, True = may attend, shaped to broadcast against the attention scores (B, n_heads, T_q, T_k):
each is built once per batch and shared by every layer and head.
"""
import numpy as np

from minitorch import Tensor, backend


def as_ids(ids, name, device, ndim=2, vocab_size=None):
    """ids (a Tensor, NumPy/CuPy array or nested list of ints) -> an int64 array of ndim dims on device.

    Host ids are range-checked here, before they move; ids already on the GPU (a decoder's own outputs) are not."""
    array = ids.data if isinstance(ids, Tensor) else ids
    if not backend.is_array(array):
        array = np.asarray(array)
    if array.size == 0:  # an empty list has no integer dtype of its own
        array = array.astype(np.int64)
    if array.ndim != ndim:
        want = "(B, T)" if ndim == 2 else "(B,)"
        raise ValueError(f"{name}: expected token ids of shape {want}, got shape {tuple(array.shape)}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name}: token ids must be integers, got dtype {array.dtype}")
    bad = None if vocab_size is None else backend.out_of_range(array, vocab_size)
    if bad:
        raise ValueError(f"{name}: token ids must lie in [0, {vocab_size}), got values from {bad[0]} to {bad[1]}")
    return backend.to_device(array.astype(np.int64, copy=False), device)


def padding_mask(ids, pad_id):
    """ids (B, S) -> (B, 1, 1, S): no query may attend to a padding key."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(T, xp=np):
    """(1, 1, T, T): position i may attend to positions j <= i only (no peeking at the future)."""
    return xp.tril(xp.ones((T, T), dtype=bool))[None, None]
