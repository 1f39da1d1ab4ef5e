"""Optimizer base: over a FlatParameters keeps per-parameter state as views of flat state buffers and runs the
subclass's fused update over whole buffers (over plain parameters, per tensor); (de)serialises the state per
parameter either way, so checkpoints of one kind load into the other."""
from .. import backend
from ..core.versions import increment_version
from ..nn.utils import flat
from ..tensor import Tensor


class Optimizer:
    """Subclasses name their per-parameter state arrays (`buffers`) and implement update(p, g, state, t): one fused
    kernel that changes p (parameters) and state's arrays in place, using g (their gradients).

    params is either a list of tensors, updated one kernel each, or a FlatParameters (nn.utils.FlatParameters, built
    by the caller and shared with GradientSync): then a step is one kernel per flat buffer, or one per run of
    consecutive parameters that have a gradient and the same step count t (as in PyTorch, a parameter whose .grad is
    None is skipped, and t counts each parameter's own updates); the state is then flat too, one array per buffer."""

    buffers = ()
    counts_steps = False   # keep state["step"] per parameter (Adam's bias correction uses it)

    def __init__(self, params, lr, **hyper):
        self.flat = params if isinstance(params, flat.FlatParameters) else None
        self.params = list(self.flat.params if self.flat else dict.fromkeys(params))   # tied weights once
        if not self.params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if lr < 0:
            raise ValueError(f"{type(self).__name__}: lr must be >= 0, got {lr}")
        self.lr = lr
        self.hyper = hyper
        self.step_count = 0
        self.state = [{} for _ in self.params]
        self.position = {id(p): i for i, p in enumerate(self.params)}
        self.groups = self.flat.groups if self.flat else []
        self.group_positions = [[self.position[id(p)] for p in group.params] for group in self.groups]
        self.flat_state = [None] * len(self.groups)   # per flat buffer: {name: flat array}, made at its first step

    def zero_grad(self, set_to_none=True):
        """Every parameter's .grad becomes None (set_to_none=False: a Tensor of zeros); over a FlatParameters, one fill
        per buffer, and each .grad stays the view of its slot (set_to_none does not apply)."""
        if self.flat:
            self.flat.zero_grad()
            return
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor._make(backend.xp_of(p.grad.data).zeros_like(p.grad.data))

    def step(self):
        """Apply one update to every parameter that has a gradient."""
        self.step_count += 1
        if self.flat:
            self.flat.settle()   # takes back reassigned .data and .grad (nn/utils/flat.py)
        increment_version(self.params)  # a graph that saved a parameter now refuses to backward (core/versions.py)
        for p, g, state, t in self._kernels():
            # the one place where the parameters change
            self.update(p, g, state, t)

    def _kernels(self):
        """(parameters, gradients, state arrays, t) for each kernel of this step: one per run of consecutive flat
        parameters that have a gradient and the same step count t; one per tensor that has one, without a
        FlatParameters. Steps are counted and new states made here."""
        for k, group in enumerate(self.groups):
            for first, stop, t in self._runs(k, group):
                lo, hi = group.bounds[first], group.bounds[stop]
                state = {name: a[lo:hi] for name, a in self.flat_state[k].items()}
                yield group.data[lo:hi], group.grad[lo:hi], state, t
        if self.flat:
            return
        for p, state in zip(self.params, self.state):
            if p.grad is not None:
                if not state:
                    state.update((name, backend.xp_of(p.data).zeros_like(p.data)) for name in self.buffers)
                yield p.data, p.grad.data, {name: state[name] for name in self.buffers}, self._count(state)

    def _runs(self, k, group):
        """[first, stop, t] for each run of consecutive parameters of group k that have a gradient and the same t."""
        runs = []
        self._place_state(k, group)
        for i, (p, where) in enumerate(zip(group.params, self.group_positions[k])):
            if p.grad is None:
                continue
            state = self.state[where]
            if not state:
                self._make_state(k, group, i, state)
            t = 0
            if self.counts_steps:   # (inline: this loop runs over every parameter at every step)
                t = state["step"] = state.get("step", 0) + 1
            if runs and runs[-1][1] == i and runs[-1][2] == t:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1, t])
        return runs

    def _count(self, state):
        """This step's t for a parameter (its own updates so far, this one included); 0 if the optimizer counts none."""
        if not self.counts_steps:
            return 0
        state["step"] = state.get("step", 0) + 1
        return state["step"]

    def _place_state(self, k, group):
        """The flat state of buffer k, made (zeros) if missing, on the buffer's device (moved after a flat.to())."""
        if self.flat_state[k] is None:
            xp = backend.xp_of_device(group.device)
            self.flat_state[k] = {name: xp.zeros(group.size, group.dtype) for name in self.buffers}
        elif any(backend.device_of(a) != group.device for a in self.flat_state[k].values()):
            self.flat_state[k] = {name: backend.to_device(a, group.device) for name, a in self.flat_state[k].items()}
            for i, p in enumerate(group.params):
                state = self.state[self.position[id(p)]]
                if any(name in state for name in self.buffers):
                    self._make_state(k, group, i, state)

    def _make_state(self, k, group, i, state):
        """state[name] = parameter i's view of the flat state array `name`, for each of the buffers."""
        lo, hi = group.bounds[i], group.bounds[i + 1]
        for name, a in self.flat_state[k].items():
            state[name] = a[lo:hi].reshape(group.params[i].shape)

    def update(self, p, g, state, t):
        raise NotImplementedError

    def state_dict(self):
        sd = {"lr": self.lr, "step": self.step_count, "hyper": dict(self.hyper),
              "state": [dict(s) for s in self.state]}
        if hasattr(self, "initial_lr"):   # set by an lr_scheduler: what resuming it with last_epoch needs
            sd["initial_lr"] = self.initial_lr
        return sd

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
        if "initial_lr" in sd:
            self.initial_lr = sd["initial_lr"]
        self.step_count = int(sd["step"])
        self.hyper.update(sd.get("hyper", {}))
        self.state = [{} for _ in self.params]
        self.flat_state = [None] * len(self.groups)
        where = {id(p): (k, i) for k, group in enumerate(self.groups) for i, p in enumerate(group.params)}
        for p, saved, state in zip(self.params, sd["state"], self.state):
            if id(p) in where and any(name in saved for name in self.buffers):
                k, i = where[id(p)]
                self._place_state(k, self.groups[k])
                self._make_state(k, self.groups[k], i, state)
            for name, v in saved.items():
                if not hasattr(v, "shape"):
                    state[name] = v   # counts stay numbers
                    continue
                # arrays go to the parameter's device, into the flat state (a Tensor's array is .data; a CuPy array's
                # .data is its memory pointer, so only Tensors are unwrapped)
                array = backend.to_device(v.data if isinstance(v, Tensor) else v, p.device)
                if name in state:
                    state[name][...] = array
                else:
                    state[name] = array.astype(p.dtype, copy=True)
