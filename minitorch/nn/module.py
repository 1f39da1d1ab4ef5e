"""Module and Parameter: the containers that hold a model's weights and find them for the optimizer."""
from collections import OrderedDict, namedtuple

import numpy as np

from .. import backend
from ..tensor import RemovableHandle, Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as trainable (requires_grad=True).

    A FlatParameters (nn/utils/flat.py) may make its `data` a view of one buffer and its `grad` one of another;
    Parameter itself knows nothing of that (the rule for assigning either is in flat.py's docstring)."""

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        super().__init__(data.data if isinstance(data, Tensor) else data,
                         dtype=data.dtype if isinstance(data, Tensor) else None)
        self.requires_grad_(requires_grad)

    def __reduce_ex__(self, protocol):
        """copy.deepcopy and pickle give a parameter of its own (not a view of a flat buffer), with a copy of the
        values."""
        return _rebuild, (self.data, self.requires_grad)


def _rebuild(data, requires_grad):
    return Parameter(data, requires_grad)


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of layers and models. Parameters, buffers and submodules assigned as attributes are registered."""
    _forward_hooks = None   # register_forward_hook's {id: hook}, set on the module that has one (most have none)

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() before assigning "
                                 f"attributes")
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def register_buffer(self, name, tensor):
        """A tensor that belongs to the state (saved, moved with .to()) but is not trained."""
        self._buffers[name] = tensor
        object.__setattr__(self, name, tensor)

    def __call__(self, *args, **kwargs):
        output = self.forward(*args, **kwargs)
        hooks = self._forward_hooks
        if hooks:
            for hook in list(hooks.values()):
                result = hook(self, args, output)
                output = output if result is None else result
        return output

    def register_forward_hook(self, hook):
        """Call hook(module, args, output) after each forward; an output it returns replaces the module's. Returns a
        handle whose remove() unregisters it (as PyTorch's)."""
        if not callable(hook):
            raise TypeError(f"register_forward_hook: hook must be callable, got {type(hook).__name__}")
        hooks = self.__dict__.setdefault("_forward_hooks", {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    # ----- traversal -----
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def children(self):
        return iter(self._modules.values())

    def named_parameters(self):
        """(name, Parameter) pairs, each parameter once even if it is shared (tied weights)."""
        seen = set()
        for prefix, m in self.named_modules():
            for name, p in m._parameters.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{prefix}.{name}" if prefix else name), p

    def parameters(self):
        """The parameters, one at a time (a generator, as PyTorch's: next(model.parameters()), list(...))."""
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        for prefix, m in self.named_modules():
            for name, b in m._buffers.items():
                yield (f"{prefix}.{name}" if prefix else name), b

    # ----- modes and devices -----
    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Every parameter's .grad becomes None (set_to_none=False: zeros). With a FlatParameters, call its
        zero_grad() (or the optimizer's) instead: one fill, and the gradients stay in the flat buffer."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor._make(backend.xp_of(p.grad.data).zeros_like(p.grad.data))

    def to(self, device):
        """Move every parameter and buffer to device, in place; returns self. (Parameters of a FlatParameters: its
        next settle() moves its buffers along, or call FlatParameters.to(device).)"""
        device = backend.check_device(device)
        for m in self.modules():
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                t.data = backend.to_device(t.data, device)
                if t.grad is not None:
                    t.grad.data = backend.to_device(t.grad.data, device)
        return self

    def double(self):
        """Every floating-point parameter and buffer cast to float64, in place; returns self."""
        return self._cast(np.float64)

    def float(self):
        """Every floating-point parameter and buffer cast to float32, in place; returns self."""
        return self._cast(np.float32)

    def _cast(self, dtype):
        for m in self.modules():
            for t in list(m._parameters.values()) + list(m._buffers.values()):
                if t.dtype.kind == "f":
                    t.data = t.data.astype(dtype, copy=False)
                    if t.grad is not None:
                        t.grad.data = t.grad.data.astype(dtype, copy=False)
        return self

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    # ----- state -----
    def state_dict(self):
        """name -> tensor for every parameter and buffer (the tensors themselves, not copies)."""
        state = OrderedDict(self.named_parameters())
        state.update(self.named_buffers())
        return state

    def load_state_dict(self, state, strict=True):
        """Copy values from state into this module's parameters and buffers, checking names and shapes. Returns
        (missing_keys, unexpected_keys), as PyTorch; strict (the default) refuses either with a RuntimeError."""
        own = self.state_dict()
        result = IncompatibleKeys([k for k in own if k not in state], [k for k in state if k not in own])
        if strict and (result.missing_keys or result.unexpected_keys):
            found = (("Missing", result.missing_keys), ("Unexpected", result.unexpected_keys))
            parts = [f"{what} key(s) in state_dict: " + ", ".join(f'"{k}"' for k in keys)
                     for what, keys in found if keys]
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(parts))
        for name, value in state.items():
            if name not in own:
                continue
            target = own[name]
            array = backend.array_of(value)
            if tuple(array.shape) != target.shape:
                raise ValueError(f"load_state_dict for {type(self).__name__}: {name} has shape "
                                 f"{tuple(array.shape)} in the state but {target.shape} in the model")
            target.data = backend.to_device(array, target.device).astype(target.dtype, copy=True)
        return result

    def __repr__(self):
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def extra_repr(self):
        return ""
