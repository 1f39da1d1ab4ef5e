"""One training step, for `fit`, `bench` and the experiments: forward, loss, backward, the sum over ranks, clipping,
the non-finite check, Adam and the learning-rate schedule.

The step reads one thing from the device: the loss, the gradient norm and the ranks' stop votes, stacked into one
small array after clipping. Everything before it (the ids' checks, the clipping scale) happens on the host before
the batch moves, or on the device without being read; on a GPU the host then queues the next step's work while the
device is still busy, and waits once.

precision "fp16": the forward runs under mt.autocast (float16 activations and products, float32 sums where they
matter), the loss is scaled by a GradScaler before backward and the gradients unscaled into the float32 flat buffer
before clipping; an overflow (a finite loss whose gradient norm is inf or nan) skips the step and halves the scale.
That check is the norm of the same one read: the scaler is told what was read (set_found_inf) and reads nothing.
"""
import contextlib
import ctypes
import math
from typing import NamedTuple

import numpy as np

import minitorch as mt
from minitorch import backend
from minitorch.optim.schedule import noam_factor

from ..cli.arguments import PRECISIONS
from .loss import share_loss

QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore"}  # non-finite values are handled in update()
# fp16's GradScaler: PyTorch's defaults (a start of 2^16, halved on an overflow, doubled after 2000 clean steps)
INIT_SCALE, GROWTH_INTERVAL = 2.0 ** 16, 2000


def keep_freed_memory():
    """glibc: keep the memory a step frees for the next one (arrays under 8 MiB come from the heap, and the heap is
    never handed back to the system), instead of returning it and faulting every page in again at the next step.

    A step allocates and frees its activations; glibc hands the free top of its heap back to the system unless a
    live array sits above it. With the gradients and optimizer state in flat buffers (outside the heap) nothing does,
    and a `small` CPU step took ~110,000 page faults instead of main's ~40,000 (its per-parameter gradient arrays held
    the heap by chance). Measured per step (small, CPU): 8 MiB gives ~40,000 and main's peak RSS; 16 or 32 MiB ~800
    but 45 MB more peak RSS (the 16 MB activations fragment the heap). Elsewhere (macOS, musl): nothing."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-3, 8 << 20)         # M_MMAP_THRESHOLD
        mallopt(-1, (1 << 31) - 1)   # M_TRIM_THRESHOLD (an int): never trim


def make_optimizer(params, lr, warmup, d_model, weight_decay=0.0, ramp=True):
    """Adam (0.9, 0.98, 1e-9) and the warm-up schedule of "Attention Is All You Need", peaking at lr after warmup
    steps; a model without a d_model (an LSTM) passes 1 and gets the same curve. weight_decay > 0: AdamW's
    decoupled decay, p <- p (1 - lr wd), scheduled with the learning rate. ramp=False (experiment depth): no linear
    rise, the peak lr from the first step, then the same 1/sqrt(step) decay after warmup steps.

    params: a FlatParameters (shared with a GradientSync), or parameters, which are stored flat here (one
    FlatParameters, optimizer.flat) so that the update phase is a few kernels over whole buffers."""
    if not isinstance(params, mt.nn.utils.FlatParameters):
        params = mt.nn.utils.FlatParameters(params)
    adam = mt.optim.AdamW if weight_decay else mt.optim.Adam
    optimizer = adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=weight_decay)
    if not ramp:   # the lr of step s + 1 (LambdaLR counts steps from 0)
        return optimizer, mt.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, math.sqrt(warmup / (s + 1))))
    return optimizer, mt.optim.WarmupSchedule(optimizer, d_model, warmup, noam_factor(lr, d_model, warmup))


class StepResult(NamedTuple):
    loss: float          # the batch's label-smoothed loss (summed over the ranks in a job of several)
    grad_norm: float     # the gradients' joint norm before clipping
    stop_votes: int      # how many ranks had been asked to stop (0 in one process)
    applied: bool        # False: the loss or the norm was nan or inf, and nothing was changed
    overflow: bool = False   # fp16: not applied because the scaled gradients overflowed (the scale was lowered)


class TrainStep:
    """step(batch) -> StepResult: one update of model on a batch of host arrays (src, tgt_in, tgt_out).

    schedule may be None (the caller sets optimizer.lr itself). With sync (a distributed.GradientSync) the batch is
    this rank's share (None for an empty one) and n_tokens the whole batch's target-token count: the share's loss is
    its token sum over n_tokens, so the summed gradients are those of the batch's mean loss.
    precision: "fp32", or "fp16" (the module docstring; `scaler` is then its GradScaler, else None).
    """

    def __init__(self, model, optimizer, schedule, label_smoothing, clip_norm, device, sync=None, precision="fp32"):
        self.model, self.optimizer, self.schedule, self.device, self.sync = model, optimizer, schedule, device, sync
        self.label_smoothing, self.clip_norm, self.precision = label_smoothing, clip_norm, precision
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        half = precision == "fp16"
        self.scaler = mt.amp.GradScaler(device, init_scale=INIT_SCALE, growth_interval=GROWTH_INTERVAL) if half \
            else None
        # what is clipped: the optimizer's flat buffers (a kernel or two each), else every parameter's gradient
        flat = getattr(optimizer, "flat", None)
        self.params = flat if flat is not None else list(model.parameters())
        if device == "cpu":
            keep_freed_memory()

    def casting(self):
        """The forward's precision: mt.autocast for fp16, else nothing."""
        return mt.autocast(self.device, dtype=mt.float16) if self.scaler is not None else contextlib.nullcontext()

    def forward(self, batch, n_tokens=None):
        """The loss of batch (a 0-d Tensor on the device; None for an empty share): ids move to the device here."""
        if batch is None:
            return None
        src, tgt_in, tgt_out = (backend.to_device(a, self.device) for a in batch)
        with np.errstate(**QUIET), self.casting():
            return share_loss(self.model(src, tgt_in), tgt_out, self.label_smoothing, n_tokens)

    def update(self, loss, stop_vote=False, mark=None):
        """Backward from loss, then sum, clip, check and step; mark() (optional) is called after backward (and the
        sum) and after clipping, for the bench's phase times."""
        self.optimizer.zero_grad()
        xp = backend.xp_of_device(self.device)
        scaler = self.scaler
        with np.errstate(**QUIET):
            if loss is not None:
                (loss if scaler is None else scaler.scale(loss)).backward()
                loss = loss.data
            else:
                loss = xp.zeros((), dtype=np.float32)
            extras = [loss, float(stop_vote)]
            if self.sync is not None:
                extras = self.sync(extras)   # (the scaled gradients' sum: unscaled after it)
            if scaler is not None:
                scaler.unscale_(self.optimizer)
            mark and mark()
            norm = mt.nn.utils.clip_grad_norm_(self.params, self.clip_norm).data
            mark and mark()
            # the step's one read from the device: loss, norm and votes together
            loss, norm, votes = backend.to_numpy(xp.stack([xp.asarray(v, dtype=np.float64)
                                                           for v in (extras[0], norm, extras[1])])).tolist()
        finite = np.isfinite(loss) and np.isfinite(norm)
        if scaler is not None:   # an inf or nan gradient shows in the norm: the scaler needs no read of its own
            scaler.set_found_inf(self.optimizer, not np.isfinite(norm))
            if finite:
                scaler.step(self.optimizer)
            scaler.update()
        if not finite:
            self.optimizer.zero_grad()
            return StepResult(loss, norm, int(votes), False, scaler is not None and bool(np.isfinite(loss)))
        if scaler is None:
            self.optimizer.step()
        if self.schedule is not None:
            self.schedule.step()
        return StepResult(loss, norm, int(votes), True)

    def __call__(self, batch, n_tokens=None, stop_vote=False):
        return self.update(self.forward(batch, n_tokens), stop_vote)
