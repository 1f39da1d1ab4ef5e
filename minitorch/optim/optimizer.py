"""Optimizer base: holds the parameters, per-parameter state arrays, and (de)serialises them."""
from .. import backend
from ..autograd import increment_version
from ..tensor import Tensor


class Optimizer:
    """Subclasses implement update(p, g, state), which changes the parameter's array p in place using the gradient
    array g and the parameter's own state dict."""

    def __init__(self, params, lr, **hyper):
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if lr < 0:
            raise ValueError(f"{type(self).__name__}: lr must be >= 0, got {lr}")
        self.lr = lr
        self.hyper = hyper
        self.step_count = 0
        self.state = [{} for _ in self.params]

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def step(self):
        """Apply one update to every parameter that has a gradient."""
        self.step_count += 1
        increment_version(self.params)  # a graph that saved a parameter now refuses to backward (autograd/versions.py)
        for p, state in zip(self.params, self.state):
            if p.grad is not None:
                self.update(p.data, p.grad.data, state)

    def update(self, p, g, state):
        raise NotImplementedError

    def state_dict(self):
        return {"lr": self.lr, "step": self.step_count, "hyper": dict(self.hyper),
                "state": [dict(s) for s in self.state]}

    def load_state_dict(self, sd):
        if len(sd["state"]) != len(self.params):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state holds {len(sd['state'])} parameters, "
                             f"the optimizer has {len(self.params)}")
        for i, (p, s) in enumerate(zip(self.params, sd["state"])):
            for k, v in s.items():
                if hasattr(v, "shape") and tuple(v.shape) != p.shape:
                    raise ValueError(f"{type(self).__name__}.load_state_dict: state {k!r} of parameter {i} has shape "
                                     f"{tuple(v.shape)}, the parameter has {p.shape}")
        self.lr = sd["lr"]
        self.step_count = int(sd["step"])
        self.hyper.update(sd.get("hyper", {}))
        # (a Tensor's array is .data; a CuPy array's .data is its memory pointer, so only Tensors are unwrapped)
        self.state = [{k: backend.to_device(v.data if isinstance(v, Tensor) else v, p.device).astype(p.dtype, copy=True)
                       if hasattr(v, "shape") else v  # arrays go to the parameter's device; counts stay numbers
                       for k, v in s.items()} for p, s in zip(self.params, sd["state"])]
