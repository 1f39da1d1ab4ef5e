"""Activation checkpointing (torch.utils.checkpoint): keep a block's inputs instead of everything its ops save for
backward, and run the block's forward again during backward.

Memory for time: a Transformer layer saves its attention weights (B, h, T, T) and several (B, T, d) activations; a
checkpointed layer keeps only its input (B, T, d) and pays one more forward per backward (examples/checkpoint_memory.py
measures the bytes). As PyTorch's reentrant variant: the block's backward accumulates into the .grad of the
parameters it uses, so checkpoint works with backward() (not mt.grad), and any other tensor that requires grad and
that the block uses must be passed as an argument, not captured.
"""
import contextlib

from .. import backend
from ..core import Function, Node, enable_grad, grad, no_grad, run_backward
from ..tensor import Tensor


class Checkpoint(Function):
    """out = fn(*inputs) with no graph kept inside; backward recomputes fn with a graph and walks it with g."""

    def forward(self, *arrays, fn, kwargs, preserve_rng_state):
        self.save_for_backward(*arrays)
        self.fn, self.kwargs = fn, kwargs
        self.rng_state = _rng_state(arrays) if preserve_rng_state else None
        with no_grad():
            out = fn(*[_tensor_of(a) for a in arrays], **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"checkpoint: the function must return one Tensor, got {type(out).__name__}")
        return out.data

    def backward(self, g):
        inputs = self.saved_tensors
        if isinstance(g, Node):  # create_graph=True: the inputs are the graph's Tensors; differentiate the block itself
            with _replayed_rng(self.rng_state):
                out = self.fn(*inputs, **self.kwargs)
            targets = [x for x in inputs if isinstance(x, Node) and x.requires_grad]
            found = iter(grad([out], targets, [g], create_graph=True, allow_unused=True))
            return tuple(next(found) if isinstance(x, Node) and x.requires_grad else None for x in inputs)
        leaves = [_tensor_of(a, need) for a, need in zip(inputs, self.needs_input_grad)]
        with _replayed_rng(self.rng_state), enable_grad():
            out = self.fn(*leaves, **self.kwargs)   # the same forward, now recorded (and the same dropout masks)
        if out.requires_grad:
            run_backward([out], [g])
        return tuple(leaf.grad.data if isinstance(leaf, Tensor) and leaf.grad is not None else None
                     for leaf in leaves)


def checkpoint(function, *args, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) -> one Tensor, keeping only args for backward and recomputing the rest then.
    preserve_rng_state=True replays the random draws (dropout) of the first forward in the recomputation."""
    if not callable(function):
        raise TypeError(f"checkpoint: the first argument must be a function, got {type(function).__name__}")
    return Checkpoint.apply(*args, fn=function, kwargs=kwargs, preserve_rng_state=preserve_rng_state)


def _tensor_of(value, requires_grad=False):
    """An array argument as a new leaf Tensor (requiring grad where its original did); anything else as it is."""
    if not backend.is_array(value):
        return value
    t = Tensor._make(value)
    return t.requires_grad_(True) if requires_grad else t


def _rng_state(arrays):
    """(device, state) of the generator of the arguments' device, copied where it lives (no read from a GPU)."""
    device = next((backend.device_of(a) for a in arrays if backend.is_array(a)), "cpu")
    return device, _get_rng(device)


def _get_rng(device):
    if device == "cpu":
        return backend.rng("cpu").bit_generator.state   # a copy (a dict)
    return backend._cuda_state(backend.rng(device)).copy()


def _set_rng(device, state):
    if device == "cpu":
        backend.rng("cpu").bit_generator.state = state
    else:
        backend._cuda_state(backend.rng(device))[...] = state


@contextlib.contextmanager
def _replayed_rng(saved):
    """Inside the block the generator draws again what it drew from `saved`; afterwards it continues as before."""
    if saved is None:
        yield
        return
    device, state = saved
    now = _get_rng(device)
    _set_rng(device, state)
    try:
        yield
    finally:
        _set_rng(device, now)


__all__ = ["checkpoint"]
