"""GradScaler: dynamic loss scaling, with PyTorch's GradScaler's semantics.

float16 gradients of small losses underflow to 0; multiplying the loss by a large scale S lifts them into float16's
range, and dividing the float32 gradients by S before the update (unscale_) gives them back. Too large an S overflows
some gradient to inf: that step is skipped, and S shrinks. So:
    scale(loss)        loss * S
    unscale_(opt)      g /= S for the optimizer's gradients
    step(opt)          opt.step() unless found_inf, whether any g is inf or nan: one reduction on the device and
                       one read (a caller that read it with its own numbers gives it with set_found_inf instead)
    update()           found_inf: S *= backoff_factor, and the count of clean steps restarts; otherwise the count
                       grows, and after growth_interval clean steps in a row S *= growth_factor (kept where that is
                       not finite)
S is a float32 on the host (PyTorch keeps it on the device): the host knows found_inf once it has read it, so
update() costs no launch and no read.
"""
import numpy as np

from .. import backend
from ..nn.utils import flat
from ..tensor import Tensor

READY, UNSCALED, STEPPED = "ready", "unscaled", "stepped"


@backend.fuse
def unscale_kernel(xp, g, inv_scale):
    """g *= 1 / S, in place."""
    g *= inv_scale


@backend.fuse
def any_non_finite(xp, g):
    """Whether some element of g is inf or nan (a 0-d bool)."""
    return xp.any(~xp.isfinite(g))


class GradScaler:
    """Dynamic loss scaling (the module docstring); torch.amp.GradScaler's arguments, methods and state_dict."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if not (isinstance(growth_interval, int) and growth_interval > 0):
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got {growth_interval!r}")
        if not (np.isfinite(init_scale) and init_scale > 0):
            raise ValueError(f"GradScaler: init_scale must be a positive number, got {init_scale}")
        self.device, self._enabled = str(device), bool(enabled)
        self._scale, self._growth_tracker = np.float32(init_scale), 0
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = growth_interval
        self._per_optimizer = {}   # id(optimizer) -> {"stage": ..., "found_inf": a device 0-d array or a bool}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """S, a Python float (1.0 when disabled)."""
        return float(self._scale) if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def scale(self, outputs):
        """outputs * S: a Tensor, or a list or tuple of them (the same when disabled)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * float(self._scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list or tuple of them, got {type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": READY, "found_inf": None, "grads": ()})

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by S in place (float32: after its flat buffers are settled). Once per
        optimizer between update()s, and before step()."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = _gradients(optimizer)
        inv_scale = np.float64(1.0) / np.float64(self._scale)   # (as PyTorch: the reciprocal in double, then float)
        for g in grads:
            flat.run(unscale_kernel, [g], g.dtype.type(np.float32(inv_scale)))
        state["grads"], state["stage"] = grads, UNSCALED

    def found_inf(self, optimizer):
        """Whether the optimizer's unscaled gradients hold an inf or nan: a 0-d device array (> 0: found), computed
        here, for the caller to read with the other numbers of its step; or a bool once known (set_found_inf)."""
        return self._found_on_device(self._state(optimizer))

    @staticmethod
    def _found_on_device(state):
        if state["found_inf"] is None and state["stage"] != READY:
            found = False
            for g in state["grads"]:
                bad = flat.run_sum(any_non_finite, g)
                found = bad if found is False else found + bad
            state["found_inf"] = found
        return state["found_inf"]

    def _found_on_host(self, state):
        """found_inf as a bool, read from the device if it is not known yet (False if nothing was unscaled)."""
        found = self._found_on_device(state)
        if found is None:
            return False
        if not isinstance(found, bool):   # the step's device read
            found = state["found_inf"] = bool(backend.to_numpy(found) > 0)
        return found

    def set_found_inf(self, optimizer, found):
        """Give found_inf(optimizer) as the caller read it (with its step's other numbers): step() reads nothing."""
        self._state(optimizer)["found_inf"] = bool(found)

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless the gradients hold an inf or nan (unscale_ first if not done);
        returns what it returned, or None for a skipped step."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if state["stage"] == STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == READY:
            self.unscale_(optimizer)
        result = None if self._found_on_host(state) else optimizer.step(*args, **kwargs)
        state["stage"] = STEPPED
        return result

    def update(self, new_scale=None):
        """The scale for the next step: new_scale if given, else backed off after an overflow or grown after
        growth_interval clean steps (the module docstring)."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = new_scale.item() if isinstance(new_scale, Tensor) else new_scale
            self._scale = np.float32(value)
        else:
            if not any(s["found_inf"] is not None or s["stage"] != READY for s in self._per_optimizer.values()):
                raise AssertionError("No inf checks were recorded prior to update.")
            found = any([self._found_on_host(state) for state in self._per_optimizer.values()])
            self._scale, self._growth_tracker = next_scale(self._scale, self._growth_tracker, found,
                                                           self._growth_factor, self._backoff_factor,
                                                           self._growth_interval)
        self._per_optimizer = {}

    def state_dict(self):
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": float(self._scale), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": int(self._growth_tracker)}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = np.float32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def next_scale(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """(S, clean steps in a row) after a step: PyTorch's _amp_update_scale_, in float32."""
    if found_inf:
        return np.float32(scale * np.float32(backoff_factor)), 0
    tracker += 1
    if tracker == growth_interval:
        grown = np.float32(scale * np.float32(growth_factor))
        return (grown if np.isfinite(grown) else scale), 0
    return scale, tracker


def _gradients(optimizer):
    """The optimizer's gradient arrays: each flat buffer's whole (settled first), and the others' own."""
    arrays, seen = [], set()
    for p in optimizer.params:
        found = flat.buffer_of(p)
        if found is not None:
            buffer = found[0]
            if id(buffer) not in seen:
                seen.add(id(buffer))
                buffer.settle()
                arrays.append(buffer.grad)
        elif p.grad is not None:
            arrays.append(p.grad.data)
    return arrays
