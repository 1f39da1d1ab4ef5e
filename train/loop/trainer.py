"""Trainer: the loop that advances a run, step by step and epoch by epoch, from the parts that assemble.py built.

Where the run stands is one object (training_state.Progress), saved and loaded with the weights as one; the step
itself is step.py's, validation validation.py's.
"""
import json
import math
import sys
import time
from typing import NamedTuple

from tqdm import tqdm

import minitorch as mt

from ..cli import parallel, progress
from ..cli.errors import TrainError
from ..cli.memory import during
from ..cli.prog import PROG
from ..data.batching import token_batches, training_batch
from ..run import checkpoint
from . import training_state, validation
from .stopping import STOP_FILE, StopRequest, diverged_message

# each checkpoint is written whole (a temporary file, then a rename): what was saved before is still there
RESUMABLE = ("the checkpoints written before are whole: --resume continues from last.npz where the run has one, "
             "and without one the same command starts afresh")
MAX_BAD_STEPS = 5  # steps in a row with a nan/inf loss or gradient norm before the run stops


class Stepped(NamedTuple):
    """What Trainer.train_step did: step.py's StepResult, the batch's target tokens (all ranks') and its seconds."""
    result: object
    n_tokens: int
    seconds: float


class Trainer:
    """The loop that trains a run: its parts (model, optimizer, data, ...) and where it stands (progress)."""

    def __init__(self, parts, progress):
        """parts: the assembled run (assemble.RunParts); progress: where it stands (training_state.Progress)."""
        self.s, self.run_dir, self.device = parts.settings, parts.run_dir, parts.device
        self.world, self.main = parts.world, parts.world.is_main   # main: the rank that writes files and prints
        self.tok, self.training_pairs, self.validation = parts.tok, parts.training_pairs, parts.validation
        self.model, self.optimizer, self.schedule, self.step_fn = parts.model, parts.optimizer, parts.schedule, \
            parts.step_fn
        self.blas_check, self.metrics_path = parts.blas_check, parts.metrics_path
        self.progress = progress   # all that last.npz saves besides the weights, optimizer, schedule and RNG
        self.stop_request, self.stop_votes = None, 0   # Ctrl-C seen here; ranks that saw it (from the last sync)
        self.stop_file = self.run_dir / STOP_FILE
        self.bad_steps = []   # the current run of skipped steps (not saved: a resumed run starts a new count)
        self.examples = []   # the last validation's example translations
        self.scoring = validation.Scoring(self.s.batch_tokens, self.s.label_smoothing, self.device, self.world)

    @property
    def step(self):
        """The number of updates made so far."""
        return self.progress.step

    # ----- the loop -----
    def fit(self):
        s = self.s
        p = self.progress
        print(f"run folder {self.run_dir}; {len(self.batches(p.epoch))} batches an epoch of about "
              f"{s.batch_tokens} tokens" + (f"; precision {s.precision}" if s.precision != "fp32" else "")
              + (f"; resuming at step {p.step} (epoch {p.epoch + 1})" if p.step else "")
              + (f"; data-parallel over {self.world.size} processes" if self.world.size > 1 else ""))
        if self.main and self.stop_file.is_file():   # left by a run that ended before it saw it
            self.stop_file.unlink()
            print(f"removed {self.stop_file}, left from before")
        # perf_counter is a monotonic clock; a fake one that stands still or goes back counts as no time (elapsed)
        self.started, self.val_seconds = time.perf_counter(), 0.0   # this command's wall time, and validation's
        with StopRequest(quiet=not self.main) as stop:
            self.stop_request = stop
            while p.epoch < s.epochs and not self.out_of_steps():
                batches = self.batches(p.epoch)
                bar = progress.bar(len(batches), p.batch_pos, f"epoch {p.epoch + 1}/{s.epochs}", "step",
                                   enabled=self.main)
                while p.batch_pos < len(batches) and not self.out_of_steps():
                    with during(f"training step {p.step + 1}", "a smaller --batch-tokens needs less"):
                        updated = self.advance(batches[p.batch_pos])
                    bar.update(1)
                    bar.set_postfix_str(self.postfix(len(batches)), refresh=False)
                    if self.stopping(stop):
                        bar.close()
                        return self.stop_here(stop)
                    if len(self.bad_steps) >= MAX_BAD_STEPS:
                        bar.close()
                        raise TrainError(diverged_message(self.bad_steps, p.step, self.run_dir))
                    if updated and s.save_every and p.step % s.save_every == 0:
                        self.save_last()
                bar.close()
                partial = p.batch_pos < len(batches)
                record = self.end_of_epoch(partial, stop)
                if record is None:
                    return self.stop_here(stop)
                if partial:
                    print(f"reached --max-steps {s.max_steps}; continue with --resume and a larger --max-steps")
                    break
        validation.print_examples(self.examples, self.run_dir, self.s.src)
        if self.step_fn.scaler is not None:
            print(f"fp16: {p.overflows} step{'s' if p.overflows != 1 else ''} skipped for overflowing gradients; "
                  f"loss scale now {self.step_fn.scaler.get_scale():g}")
        wall = progress.elapsed(self.started, time.perf_counter())
        print(f"done: best validation BLEU {p.best_bleu:.2f}; checkpoints in {self.run_dir}; validation took "
              f"{self.val_seconds:.0f} s of {wall:.0f} s ({100 * self.val_seconds / max(wall, 1e-9):.0f}%)")
        return 0

    def batches(self, epoch):
        src, tgt = self.training_pairs.of_epoch(epoch)
        return token_batches([len(x) + 1 for x in src], [len(y) + 1 for y in tgt], self.s.batch_tokens,
                             self.s.seed, epoch)

    def stop_wanted(self, stop):
        """Has this process been asked to stop: by a signal, or (rank 0, which owns the run folder) a STOP file?"""
        return bool(stop.requested) or (self.main and self.stop_file.is_file())

    def stopping(self, stop):
        """Stop after this step? In a job of several ranks, all stop after the same step: each step's sync counts
        the ranks that had been asked to by then."""
        return self.stop_wanted(stop) if self.world.size == 1 else self.stop_votes > 0

    def out_of_steps(self):
        return self.s.max_steps is not None and self.progress.step >= self.s.max_steps

    def advance(self, index):
        """One step of the loop on the batch of sentences `index`: the update (train_step), and beside it what the
        loop keeps of each step: this rank's stop vote (sent with the step's gradient sync), where the run stands,
        the window statistics, a skipped batch, the BLAS-thread check. False when the batch was skipped."""
        lr = self.optimizer.lr
        done = self.train_step(index, stop_vote=self.stop_vote())
        result = done.result
        self.stop_votes = result.stop_votes
        self.progress.batch_pos += 1
        if result.overflow:   # fp16: the scaled gradients overflowed; the scaler lowered the scale
            self.optimizer.zero_grad()
            self.progress.epoch_overflows += 1
            self.progress.overflows += 1
            return False
        if not result.applied:
            bad = "loss" if not math.isfinite(result.loss) else "gradient norm"
            self.skip_step(bad, result.loss if bad == "loss" else result.grad_norm)
            return False
        self.bad_steps = []
        self.progress.add_step(result.loss, done.n_tokens, done.seconds, lr)
        self.blas_check.after_step(done.seconds, done.n_tokens)
        if self.progress.window["steps"] == self.s.log_every:
            self.log_window()
        return True

    def stop_vote(self):
        """Whether this rank asks to stop, in a job of several ranks (each step's sync counts the votes, so that all
        stop after the same step); one process decides alone (stopping)."""
        return self.world.size > 1 and self.stop_request is not None and self.stop_wanted(self.stop_request)

    def train_step(self, index, stop_vote=False):
        """One update on the batch of sentences `index` -> Stepped: step.py's StepResult (applied False when a nan/inf
        loss or gradient norm left the weights, optimizer and schedule as they were), the batch's target tokens
        and the step's seconds."""
        start = time.perf_counter()
        # each rank takes its share of the batch; its loss is its tokens' sum over the whole batch's token count,
        # so that the ranks' gradients add up to the gradient of the batch's mean loss
        mine = parallel.share(index, self.world)
        train_src, train_tgt = self.training_pairs.of_epoch(self.progress.epoch)
        n_tokens = sum(len(train_tgt[i]) + 1 for i in index)
        batch = (training_batch([train_src[i] for i in mine], [train_tgt[i] for i in mine])
                 if len(mine) else None)
        result = self.step_fn(batch, n_tokens if self.world.size > 1 else None, stop_vote)
        return Stepped(result, n_tokens, progress.elapsed(start, time.perf_counter()))

    def skip_step(self, what, value):
        """Leave out the current batch: its loss or gradient norm is nan or inf."""
        p = self.progress
        self.optimizer.zero_grad()
        self.bad_steps.append((p.epoch + 1, p.batch_pos, what, value))
        p.epoch_skipped += 1
        if self.main:
            tqdm.write(f"warning: epoch {p.epoch + 1}, batch {p.batch_pos}: the {what} is {value}; skipped "
                       f"this batch ({len(self.bad_steps)} in a row; the run stops at {MAX_BAD_STEPS})",
                       file=sys.stderr)

    def log_window(self):
        """A train record of the steps since the last one (every log_every steps, and at the end of an epoch)."""
        p = self.progress
        w = p.window
        speed = progress.per_second(w["tokens"], w["time"])   # None (null) when the clock stood still
        self.log({"kind": "train", "step": p.step, "epoch": p.epoch + 1, "loss": w["loss"] / w["steps"],
                  "lr": w["lr"], "tokens_per_s": speed, "s_per_step": w["time"] / w["steps"], **self.scaling()})
        p.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0, "last": w["loss"] / w["steps"],
                    "last_steps": w["steps"], "speed": speed, "step_time": w["time"] / w["steps"], "lr": w["lr"]}

    def scaling(self):
        """fp16: {"loss_scale": the scaler's scale now, "overflows": steps skipped for overflow in the run}, else {}."""
        scaler = self.step_fn.scaler
        return {} if scaler is None else {"loss_scale": scaler.get_scale(), "overflows": self.progress.overflows}

    def postfix(self, n_batches):
        """The progress bar's text (progress.training_postfix) with the steps left in the whole run."""
        steps_left = (self.s.epochs - self.progress.epoch) * n_batches - self.progress.batch_pos
        if self.s.max_steps is not None:
            steps_left = min(steps_left, self.s.max_steps - self.progress.step)
        return progress.training_postfix(self.progress.window, steps_left)

    def end_of_epoch(self, partial, stop):
        """Validate, record, save best/avg/last; None when a Ctrl-C came during validation."""
        p = self.progress
        if p.window["steps"]:
            self.log_window()
        start = time.perf_counter()
        with during("validation"):
            validated = validation.validate(self.model, self.validation, self.tok, stop, self.scoring)
        if validated is None:
            return None
        val, self.examples = validated
        seconds = progress.elapsed(start, time.perf_counter())
        self.val_seconds += seconds
        record = {"kind": "epoch", "epoch": p.epoch + 1, "step": p.step, "partial": partial,
                  "train_loss": p.epoch_loss / max(p.epoch_tokens, 1), "skipped_batches": p.epoch_skipped,
                  **({"overflow_batches": p.epoch_overflows} if self.step_fn.scaler is not None else {}), **val,
                  "val_seconds": seconds,   # wall_seconds: since this command started (resume: anew)
                  "wall_seconds": progress.elapsed(self.started, time.perf_counter())}
        self.log(record)
        number = p.epoch + 1
        with during("checkpointing", RESUMABLE):
            self.save_checkpoints(val["val_bleu"], partial)
        print(validation.epoch_line(record, number, partial), flush=True)
        return record

    def save_checkpoints(self, val_bleu, partial):
        """best (if val_bleu is the best yet), this epoch's snapshot, avg and last, each written whole."""
        p, number = self.progress, self.progress.epoch + 1
        if val_bleu > p.best_bleu:
            p.best_bleu = val_bleu
            if self.main:
                checkpoint.save_model(checkpoint.checkpoint_path(self.run_dir, "best"), self.model, epoch=number,
                                      step=p.step, val_bleu=val_bleu)
        if self.main:
            checkpoint.save_model(self.run_dir / f"epoch-{number}.npz", self.model, epoch=number, step=p.step)
            kept = checkpoint.keep_last_snapshots(self.run_dir, self.s.avg_last)
            mt.save({"model": checkpoint.average_states(kept), "model_class": type(self.model).__name__,
                     "epochs": [path.stem for path in kept]}, checkpoint.checkpoint_path(self.run_dir, "avg"))
        if not partial:
            p.epoch += 1
            p.batch_pos, p.epoch_loss, p.epoch_tokens, p.epoch_skipped, p.epoch_overflows = 0, 0.0, 0, 0, 0
        training_state.save_last(self)

    def save_last(self):
        """last.npz written whole; running out of memory there is OutOfMemory that says how to go on."""
        with during("checkpointing", RESUMABLE):
            training_state.save_last(self)

    def stop_here(self, stop):
        self.save_last()
        asked = ""
        if self.main and self.stop_file.is_file():
            self.stop_file.unlink()   # so that the resumed run does not stop at once
            asked = f" as {self.stop_file} asked"
        if self.main:
            print(f"stopped at step {self.step}{asked}; saved {checkpoint.checkpoint_path(self.run_dir, 'last')}. "
                  f"Continue with: {PROG} fit --preset {self.s.preset} --run-dir {self.run_dir} --resume"
                  + (" --distributed" if self.world.size > 1 else ""), file=sys.stderr)
        return stop.exit_status

    # ----- metrics -----
    def log(self, record):
        if self.main:
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        self.progress.metrics_lines += 1
