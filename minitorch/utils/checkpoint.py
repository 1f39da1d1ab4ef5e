"""Activation checkpointing (torch.utils.checkpoint): keep a block's inputs instead of everything its ops save for
backward, and run the block's forward again during backward.

Memory for time: a Transformer layer saves its attention weights (B, h, T, T) and several (B, T, d) activations; a
checkpointed layer keeps only its input (B, T, d) and pays one more forward per backward (examples/checkpoint_memory.py
measures the bytes). Two forms, as PyTorch's use_reentrant:
- True (the default here): the block's backward accumulates into the .grad of the parameters it uses, so checkpoint
  works with backward() (not mt.grad), its output requires grad only if an argument does, and any other tensor that
  requires grad and that the block uses must be passed as an argument, not captured;
- False (PyTorch's recommendation): the first forward records the block's graph once, to find the tensors it uses
  that require grad (the parameters it captures), and drops it; they become inputs of the checkpoint's op, so a block
  whose argument does not require grad still gives its parameters their gradients, and mt.grad works too. A captured
  tensor that is not a leaf (an output of an earlier op) is differentiated through to that graph's leaves.
"""
import contextlib

from .. import backend
from ..core import Function, Value, enable_grad, grad, is_grad_enabled, no_grad, run_backward
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
        if isinstance(g, Value):  # create_graph=True: the inputs are the graph Tensors; differentiate the block itself
            with _replayed_rng(self.rng_state):
                out = self.fn(*inputs, **self.kwargs)
            targets = [x for x in inputs if isinstance(x, Value) and x.requires_grad]
            found = iter(grad([out], targets, [g], create_graph=True, allow_unused=True))
            return tuple(next(found) if isinstance(x, Value) and x.requires_grad else None for x in inputs)
        leaves = [_tensor_of(a, need) for a, need in zip(inputs, self.needs_input_grad)]
        with _replayed_rng(self.rng_state), enable_grad():
            out = self.fn(*leaves, **self.kwargs)   # the same forward, now recorded (and the same dropout masks)
        if out.requires_grad:
            run_backward([out], [g])
        return tuple(leaf.grad.data if isinstance(leaf, Tensor) and leaf.grad is not None else None
                     for leaf in leaves)


class NonReentrantCheckpoint(Function):
    """out = fn(*args) already computed (its graph dropped); inputs: the args, then the tensors fn captured that
    require grad. backward recomputes fn with a graph and differentiates it with respect to both."""

    def forward(self, *arrays, fn, kwargs, n_args, result, rng_state):
        self.save_for_backward(*arrays[:n_args])
        self.fn, self.kwargs, self.n_args, self.rng_state = fn, kwargs, n_args, rng_state
        return result

    def backward(self, g):
        create = isinstance(g, Value)   # create_graph=True: the saved args are the graph's Tensors
        args = self.saved_tensors if create else [_tensor_of(a, need) for a, need in
                                                  zip(self.saved_tensors, self.needs_input_grad)]
        captured = self.parents[self.n_args:]
        with _replayed_rng(self.rng_state), enable_grad():
            out = self.fn(*args, **self.kwargs)   # the same forward, now recorded (and the same dropout masks)
        wanted = [x for x in args if isinstance(x, Value) and x.requires_grad] + list(captured)
        if not out.requires_grad or not wanted:
            return (None,) * len(self.needs_input_grad)
        # retain_graph: a captured non-leaf leads into the outer graph, whose own backward is still to come
        found = iter(grad([out], wanted, [g if create else out._new(g)], create_graph=create, retain_graph=True,
                          allow_unused=True))
        grads = [next(found) if isinstance(x, Value) and x.requires_grad else None for x in args]
        grads += [next(found) for _ in captured]
        return tuple(x if create or x is None else x.data for x in grads)


def checkpoint(function, *args, use_reentrant=True, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) -> one Tensor, keeping only args for backward and recomputing the rest then.
    use_reentrant: True or False, PyTorch's two forms (the module's docstring). preserve_rng_state=True replays the
    random draws (dropout) of the first forward in the recomputation."""
    if not callable(function):
        raise TypeError(f"checkpoint: the first argument must be a function, got {type(function).__name__}")
    if not isinstance(use_reentrant, bool):
        raise TypeError(f"checkpoint: use_reentrant must be True or False, got {use_reentrant!r}")
    if use_reentrant:
        return Checkpoint.apply(*args, fn=function, kwargs=kwargs, preserve_rng_state=preserve_rng_state)
    if not is_grad_enabled():   # no backward to save for
        return function(*args, **kwargs)
    arrays = [a.data if isinstance(a, Tensor) else a for a in args]
    rng_state = _rng_state(arrays) if preserve_rng_state else None
    inputs = [_tensor_of(a.data, a.requires_grad) if isinstance(a, Tensor) else a for a in args]
    out = function(*inputs, **kwargs)   # recorded once (one block's activations at a time) to find what it uses
    if not isinstance(out, Tensor):
        raise TypeError(f"checkpoint: the function must return one Tensor, got {type(out).__name__}")
    captured = _captured(out, inputs)
    if not captured and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return out.detach()   # nothing to differentiate: the result as a no_grad forward would give it
    return NonReentrantCheckpoint.apply(*args, *captured, fn=function, kwargs=kwargs, n_args=len(args),
                                        result=out.data, rng_state=rng_state)


def _captured(out, inputs):
    """The tensors that require grad which out's graph reaches without passing through inputs: the leaves (a block's
    parameters) the block used without being handed them."""
    stop = {id(t) for t in inputs if isinstance(t, Tensor)}
    found, seen, stack = [], set(), [out._op or out]
    while stack:   # through the graph's nodes: ops, and the leaves themselves
        node = stack.pop()
        if id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        if isinstance(node, Tensor):
            if node.requires_grad:
                found.append(node)
            continue
        stack.extend(p for p, need in zip(node.parents, node.needs_input_grad) if need)
    return found


def _tensor_of(value, requires_grad=False):
    """An array argument as a new leaf Tensor (requiring grad where its original did); anything else as it is."""
    if not backend.is_array(value):
        return value
    t = Tensor._make(value)
    return t.requires_grad_(True) if requires_grad else t


def _rng_state(arrays):
    """(device, state) of the generator of the arguments' device, copied where it lives (no read from a GPU)."""
    device = next((backend.device_of(a) for a in arrays if backend.is_array(a)), "cpu")
    return device, _current_state(device)


def _current_state(device):
    """A copy of device's generator state. A GPU's is large (CuPy's cuRAND states: 12 MiB on an H200), so copies with
    no draw between them are one copy: blocks without dropout share it, and their replays copy nothing."""
    kept = _last_state.get(device)
    if kept is None or kept[0] != backend.rng_uses(device):
        state = _get_rng(device)
        kept = _last_state[device] = (backend.rng_uses(device), state)
    return kept[1]


_last_state = {}   # device -> (rng_uses when copied, the copy)


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
    now = _current_state(device)
    if state is not now:
        _set_rng(device, state)
    uses = backend.rng_uses(device)
    try:
        yield
    finally:
        if state is not now or backend.rng_uses(device) != uses:
            _set_rng(device, now)
            _last_state[device] = (backend.rng_uses(device), now)   # the generator holds `now` again


__all__ = ["checkpoint"]
