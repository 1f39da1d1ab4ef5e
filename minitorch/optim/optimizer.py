"""Optimizer base, with PyTorch's parameter groups: `param_groups` is a list of dicts (params, lr and the optimizer's
hyperparameters), groups may be given at construction as dicts with options of their own, `add_param_group` adds
one, and `state_dict()` / `load_state_dict()` use PyTorch's layout ({"state": {index: {...}}, "param_groups": [...]},
parameters named by their index), loading the layout written before groups existed too.

Parameters that live in flat buffers (nn.utils.FlatParameters, given as the parameters or as a group's, or found
because their .data is a view of one) are updated one kernel per run of consecutive parameters of a buffer that have
a gradient, the same step count and equal options; the state is then flat too, one array per buffer. Other
parameters are updated one kernel per tensor. Either way the state is saved per parameter, so checkpoints of one
kind load into the other."""
from .. import backend
from ..core.versions import increment_version
from ..nn.utils import flat
from ..tensor import Tensor


def check_options(lr, eps, weight_decay, betas=None):
    """PyTorch's checks of the common options, in its words (ValueError)."""
    for name, value in (("learning rate", lr), ("epsilon value", eps), ("weight_decay value", weight_decay)):
        if not value >= 0.0:
            raise ValueError(f"Invalid {name}: {value}")
    for i, beta in enumerate(betas or ()):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


class _FirstGroup(dict):
    """optimizer.hyper, kept from before parameter groups: reads the first group's options, writes every group's."""

    def __init__(self, optimizer):
        super().__init__({k: v for k, v in optimizer.param_groups[0].items() if k in optimizer.defaults
                          and k != "lr"})
        self._groups = optimizer.param_groups

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        for group in self._groups:
            group[key] = value

    def update(self, other=(), **kw):
        for k, v in dict(other, **kw).items():
            self[k] = v


class State(list):
    """optimizer.state: one dict per parameter, read by position (state[0]) or, as PyTorch's, by the parameter."""

    def __init__(self, optimizer, items=()):
        super().__init__(items)
        self._position = optimizer.position

    def __getitem__(self, key):
        if isinstance(key, Tensor):
            return super().__getitem__(self._position[id(key)])
        return super().__getitem__(key)


class Optimizer:
    """Subclasses name their per-parameter state arrays (`buffers`, or buffers_of(group)) and implement
    update(p, g, state, t, group): one fused kernel that changes p (parameters) and state's arrays in place, using g
    (their gradients) and the options of group (a dict: lr and the hyperparameters).

    params: an iterable of tensors, a FlatParameters, or an iterable of dicts, each a group: {"params": ..., and
    options that replace the defaults given here for that group}."""

    buffers = ()
    counts_steps = False   # keep state["step"] per parameter (Adam's bias correction uses it)

    def __init__(self, params, lr, **hyper):
        if lr < 0:
            raise ValueError(f"{type(self).__name__}: lr must be >= 0, got {lr}")
        self.defaults = {"lr": lr, **hyper}
        self.param_groups, self.params, self.position = [], [], {}
        self.state = State(self)
        self.flat = None
        self.step_count = 0
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of tensors or dicts, or a "
                            f"FlatParameters; got a Tensor (wrap it in a list)")
        if isinstance(params, flat.FlatParameters):
            groups = [{"params": params}]
        else:
            groups = list(params)   # (read once: model.parameters() is a generator)
            if not groups:
                raise ValueError(f"{type(self).__name__}: got an empty parameter list")
            if not isinstance(groups[0], dict):
                groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group (a dict with "params" and any options; the others come from the defaults), as PyTorch's."""
        if not isinstance(param_group, dict):
            raise TypeError(f"{type(self).__name__}.add_param_group: a group is a dict with 'params', got "
                            f"{type(param_group).__name__}")
        group = dict(param_group)
        if "params" not in group:
            raise ValueError(f"{type(self).__name__}.add_param_group: the group has no 'params'")
        params = group["params"]
        if isinstance(params, flat.FlatParameters):
            self.flat = self.flat or params
            params = params.params
        elif isinstance(params, Tensor):
            params = [params]
        params = list(dict.fromkeys(params))   # tied weights once
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: can only optimize tensors, got {type(p).__name__}")
            if id(p) in self.position:
                raise ValueError("some parameters appear in more than one parameter group")
        for name, value in self.defaults.items():
            group.setdefault(name, value)
        if group["lr"] < 0:
            raise ValueError(f"{type(self).__name__}: lr must be >= 0, got {group['lr']}")
        group["params"] = params
        for p in params:
            self.position[id(p)] = len(self.params)
            self.params.append(p)
            self.state.append({})
        self.param_groups.append(group)
        self._find_buffers()

    def _find_buffers(self):
        """Which flat buffers hold our parameters (self.flat_buffers), and which of theirs are ours, in buffer order."""
        group_of = {id(p): k for k, g in enumerate(self.param_groups) for p in g["params"]}
        self.group_index = [group_of[id(p)] for p in self.params]
        old = dict(zip(map(id, getattr(self, "flat_buffers", [])), getattr(self, "flat_state", [])))
        self.flat_buffers, self.members = [], []
        for position, p in enumerate(self.params):
            found = flat.buffer_of(p)
            if found is None:
                continue
            buffer, i = found
            if all(b is not buffer for b in self.flat_buffers):
                self.flat_buffers.append(buffer)
                self.members.append([])
            self.members[next(k for k, b in enumerate(self.flat_buffers) if b is buffer)].append((i, position))
        for members in self.members:
            members.sort()
        self.in_buffer = {position for members in self.members for _, position in members}
        # per flat buffer: {name: flat array}, made at its first step
        self.flat_state = [old.get(id(b)) for b in self.flat_buffers]
        # a FlatParameters all of whose parameters are ours: zero_grad and clipping go through it
        if self.flat is None and self.flat_buffers:
            owners = {id(b.owner()) if b.owner else None for b in self.flat_buffers}
            owner = self.flat_buffers[0].owner() if self.flat_buffers[0].owner else None
            if owners == {id(owner)} and owner is not None and all(id(p) in self.position for p in owner.params):
                self.flat = owner

    @property
    def lr(self):
        """The first group's learning rate (setting it sets every group's)."""
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        for group in self.param_groups:
            group["lr"] = value

    @property
    def hyper(self):
        """The first group's options other than lr (writing one writes every group's)."""
        return _FirstGroup(self)

    @property
    def initial_lr(self):
        if "initial_lr" not in self.param_groups[0]:
            raise AttributeError("initial_lr")
        return self.param_groups[0]["initial_lr"]

    @initial_lr.setter
    def initial_lr(self, value):
        for group in self.param_groups:
            group["initial_lr"] = value

    def buffers_of(self, group):
        """The names of the state arrays a parameter of group keeps."""
        return self.buffers

    def init_state(self, state, group):
        """Give a parameter's new state arrays (zeros) their starting values (Adagrad's initial accumulator)."""

    def zero_grad(self, set_to_none=True):
        """Every parameter's .grad becomes None (set_to_none=False: a Tensor of zeros); over a FlatParameters each
        .grad becomes None (the next settle() gathers the gradients into the buffer; set_to_none does not apply)."""
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
        for buffer in self.flat_buffers:
            buffer.settle()   # takes back reassigned .data and .grad (nn/utils/flat.py)
        increment_version(self.params)  # a graph that saved a parameter now refuses to backward (core/versions.py)
        for p, g, state, t, group in self._kernels():
            # the one place where the parameters change
            self.update(p, g, state, t, group)

    def _options(self):
        """For each group, the index of the first group with equal options: runs never cross unequal options."""
        keys, firsts = [], []
        for group in self.param_groups:
            options = {k: group[k] for k in self.defaults}
            same = next((k for k, o in enumerate(firsts) if o == options), None)
            if same is None:
                firsts.append(options)
                same = len(firsts) - 1
            keys.append(same)
        return keys

    def _kernels(self):
        """(parameters, gradients, state arrays, t, group) for each kernel of this step: one per run of consecutive
        flat parameters that have a gradient, the same step count t and equal options; one per other tensor that
        has a gradient. Steps are counted and new states made here."""
        keys = self._options()
        for k, buffer in enumerate(self.flat_buffers):
            for first, stop, t, g in self._runs(k, buffer, keys):
                lo, hi = buffer.bounds[first], buffer.bounds[stop]
                group = self.param_groups[g]
                state = {name: self.flat_state[k][name][lo:hi] for name in self.buffers_of(group)}
                yield buffer.data[lo:hi], buffer.grad[lo:hi], state, t, group
        for position, (p, state) in enumerate(zip(self.params, self.state)):
            if p.grad is not None and position not in self.in_buffer:
                group = self.param_groups[self.group_index[position]]
                names = self.buffers_of(group)
                if not state:
                    state.update((name, backend.xp_of(p.data).zeros_like(p.data)) for name in names)
                    self.init_state(state, group)
                for name in names:   # (a group given momentum after its first step)
                    if name not in state:
                        state[name] = backend.xp_of(p.data).zeros_like(p.data)
                yield p.data, p.grad.data, {name: state[name] for name in names}, self._count(state), group

    def _runs(self, k, buffer, keys):
        """[first, stop, t, group index] for each run of consecutive parameters of buffer k with a gradient, the same
        t and equal options."""
        runs = []
        self._place_state(k, buffer)
        for i, position in self.members[k]:
            p = buffer.params[i]
            if p.grad is None:
                continue
            state = self.state[position]
            g = self.group_index[position]
            if not state:
                self._make_state(k, buffer, i, state, g)
                self.init_state(state, self.param_groups[g])
            t = 0
            if self.counts_steps:   # (inline: this loop runs over every parameter at every step)
                t = state["step"] = state.get("step", 0) + 1
            if runs and runs[-1][1] == i and runs[-1][2] == t and keys[runs[-1][3]] == keys[g]:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1, t, g])
        return runs

    def _count(self, state):
        """This step's t for a parameter (its own updates so far, this one included); 0 if the optimizer counts none."""
        if not self.counts_steps:
            return 0
        state["step"] = state.get("step", 0) + 1
        return state["step"]

    def _place_state(self, k, buffer):
        """The flat state of buffer k, made (zeros) if missing, on the buffer's device (moved after a flat.to())."""
        names = dict.fromkeys(name for g in self.param_groups for name in self.buffers_of(g))
        xp = backend.xp_of_device(buffer.device)
        if self.flat_state[k] is None:
            self.flat_state[k] = {}
        elif any(backend.device_of(a) != buffer.device for a in self.flat_state[k].values()):
            self.flat_state[k] = {name: backend.to_device(a, buffer.device) for name, a in self.flat_state[k].items()}
            for i, position in self.members[k]:
                state = self.state[position]
                if any(name in state for name in self.flat_state[k]):
                    self._make_state(k, buffer, i, state, self.group_index[position])
        for name in names:
            if name not in self.flat_state[k]:   # (a group given momentum after the first step, say)
                self.flat_state[k][name] = xp.zeros(buffer.size, buffer.dtype)

    def _make_state(self, k, buffer, i, state, g):
        """state[name] = parameter i's view of the flat state array `name`, for each buffer its group keeps."""
        lo, hi = buffer.bounds[i], buffer.bounds[i + 1]
        for name in self.buffers_of(self.param_groups[g]):
            state[name] = self.flat_state[k][name][lo:hi].reshape(buffer.params[i].shape)

    def update(self, p, g, state, t, group):
        raise NotImplementedError

    def state_dict(self):
        """PyTorch's layout: {"state": {index: {name: value}}, "param_groups": [{options, "params": [index, ...]}]},
        a parameter's index its place in the groups, in order; the state arrays are views of the live state."""
        groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [self.position[id(p)] for p in
                                                                             g["params"]]}
                  for g in self.param_groups]
        return {"state": {i: dict(s) for i, s in enumerate(self.state) if s}, "param_groups": groups}

    def load_state_dict(self, sd):
        """Load a state_dict() of an optimizer over parameters of the same shapes in the same groups (the layout
        before parameter groups, {"lr", "step", "hyper", "state": [...]}, loads too)."""
        name = type(self).__name__
        if "param_groups" not in sd:   # written before parameter groups: one group, the state a list
            saved = {**sd.get("hyper", {}), "lr": sd["lr"], "params": list(range(len(sd["state"])))}
            if "initial_lr" in sd:
                saved["initial_lr"] = sd["initial_lr"]
            sd = {"state": dict(enumerate(sd["state"])), "param_groups": [saved], "step": sd.get("step", 0)}
        saved_groups = sd["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state has {len(saved_groups)} parameter groups, the "
                             f"optimizer has {len(self.param_groups)}")
        index = {}   # saved index -> our position
        for k, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: the state holds {len(saved['params'])} parameters in "
                                 f"group {k}, the optimizer has {len(group['params'])}")
            for i, p in zip(saved["params"], group["params"]):
                index[int(i)] = self.position[id(p)]
        saved_state = {index[int(i)]: s for i, s in sd["state"].items()}
        for position, s in saved_state.items():
            p = self.params[position]
            for key, v in s.items():
                if hasattr(v, "shape") and tuple(v.shape) != p.shape:
                    raise ValueError(f"{name}.load_state_dict: state {key!r} of parameter {position} has shape "
                                     f"{tuple(v.shape)}, the parameter has {p.shape}")
        for saved, group in zip(saved_groups, self.param_groups):
            group.update((k, tuple(v) if isinstance(group.get(k), tuple) else v)
                         for k, v in saved.items() if k != "params")
        self.step_count = int(sd.get("step", 0))
        self.state = State(self, ({} for _ in self.params))
        self.flat_state = [None] * len(self.flat_buffers)
        where = {position: (k, i) for k, members in enumerate(self.members) for i, position in members}
        for position, saved in saved_state.items():
            p, state, g = self.params[position], self.state[position], self.group_index[position]
            if position in where and any(n in saved for n in self.buffers_of(self.param_groups[g])):
                k, i = where[position]
                self._place_state(k, self.flat_buffers[k])
                self._make_state(k, self.flat_buffers[k], i, state, g)
            for key, v in saved.items():
                if not hasattr(v, "shape"):
                    state[key] = v   # counts stay numbers
                    continue
                # arrays go to the parameter's device, into the flat state (a Tensor's array is .data; a CuPy array's
                # .data is its memory pointer, so only Tensors are unwrapped)
                array = backend.to_device(backend.array_of(v), p.device)
                if key in state:
                    state[key][...] = array
                else:
                    state[key] = array.astype(p.dtype, copy=True)
