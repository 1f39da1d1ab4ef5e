"""The state of incremental decoding, which beam search reorders: nested dicts, lists and tuples whose tensors and
arrays have one row per sentence (or beam) along the first axis."""
from minitorch import Tensor, backend


def select_rows(state, index):
    """A copy of state keeping (or repeating) the rows index (B',) int of every tensor and array in it."""
    if isinstance(state, dict):
        return {k: select_rows(v, index) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(select_rows(v, index) for v in state)
    if isinstance(state, Tensor):
        return state[backend.to_device(index, state.device)]
    if backend.is_array(state):
        return state[backend.to_device(index, backend.device_of(state))]
    return state  # plain values (a step count) are the same for every row
