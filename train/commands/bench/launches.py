"""Kernel launches of one training step, by phase: forward+loss, backward, update (zeroing, clipping, the optimizer
and its schedule) and the step's one read of the loss and norm; counted on the CuPy stand-in (tests/cupy_standin),
which counts each call that launches a kernel on real CuPy. Real CuPy has no in-process counter: on a GPU a profiler
counts them (GPU_HOW)."""
from collections import Counter

from minitorch import backend

GPU_HOW = ("kernel launches are counted on the CuPy stand-in (PYTHONPATH=tests/cupy_standin); on a GPU count them "
           "with `nsys profile --stats=true python -m train bench ... --steps 1 --warmup-steps 0` (its "
           "cuda_gpu_kern_sum and cuda_gpu_mem_size_sum tables)")
PHASES = ("forward_loss", "backward", "clip", "read")   # what runs between BenchStep's marks, in order


def counter(device):
    """The stand-in's launch counter on "cuda" when the stand-in is the CuPy in use, else None."""
    if device != "cuda":
        return None
    return getattr(backend.xp_of_device(device), "_standin", None)


class PhaseCount:
    """Launches by phase: switch(phase) closes the current phase's count; methods wrapped by `within` count into
    their own phase wherever they run (zero_grad runs inside update(), before backward)."""

    def __init__(self, standin):
        self.standin, self.counts, self.phase = standin, Counter(), None
        self.last = self.now()

    def now(self):
        return sum(self.standin.LAUNCHES.values())

    def switch(self, phase):
        now = self.now()
        self.counts[self.phase] += now - self.last
        self.last, previous, self.phase = now, self.phase, phase
        return previous

    def within(self, obj, name, phase):
        """Count obj.name's launches into `phase`; returns the undo."""
        original = getattr(obj, name)

        def counted(*args, **kwargs):
            previous = self.switch(phase)
            try:
                return original(*args, **kwargs)
            finally:
                self.switch(previous)
        setattr(obj, name, counted)
        return lambda: delattr(obj, name)


def step_launches(bench_step, device):
    """Run one more step of a BenchStep with its launches counted -> {"forward_loss", "backward", "update":
    {"zero_grad", "clip", "optimizer", "total"}, "read", "total", "by_kind", "memcpys"}; None without a counter
    (the CPU, or a real GPU)."""
    standin = counter(device)
    if standin is None:
        return None
    count, step = PhaseCount(standin), bench_step.step
    undo = [count.within(step.optimizer, "zero_grad", "zero_grad"), count.within(step.optimizer, "step", "optimizer")]
    if step.schedule is not None:
        undo.append(count.within(step.schedule, "step", "optimizer"))
    phases = iter(PHASES[1:])
    try:
        with standin.count_launches() as counted:
            count.switch(PHASES[0])
            bench_step(on_mark=lambda: count.switch(next(phases)))
            count.switch(None)
    finally:
        for u in undo:
            u()
    c = count.counts
    update = {"zero_grad": c["zero_grad"], "clip": c["clip"], "optimizer": c["optimizer"]}
    update["total"] = sum(update.values())
    return {"forward_loss": c["forward_loss"], "backward": c["backward"], "update": update, "read": c["read"],
            "total": counted.total, "by_kind": dict(counted), "memcpys": dict(counted.memcpys)}
