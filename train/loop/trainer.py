"""Trainer: the state of one training run and the loop that advances it, step by step and epoch by epoch.

The step itself is step.py's; validation is validation.py's, the saved state training_state.py's.
"""
import json
import math
import sys
import time
from pathlib import Path

from tqdm import tqdm

import minitorch as mt
from minitorch import distributed
from transformer import registry

from . import checkpoint, training_state, validation
from .. import parallel, progress, run, threads
from ..data.batching import token_batches, training_batch
from ..data.held_back import HELD_BACK_FILE, held_back_summary, write_held_back
from ..data.pairs import read_split, read_training
from .training_pairs import TrainingPairs
from ..data.tokenizer import Tokenizer, source_tag_language, train_tokenizer
from ..errors import TrainError
from ..prog import PROG
from .rdrop import RDropStep
from .step import TrainStep, make_optimizer
from .stopping import STOP_FILE, StopRequest, diverged_message

MAX_BAD_STEPS = 5  # steps in a row with a nan/inf loss or gradient norm before the run stops


class Trainer:
    """The state of one training run and the loop that advances it."""

    def __init__(self, settings, model_kw, run_dir, data_dir, device, resume, world=None, blas_threads=None):
        self.s, self.run_dir, self.device = settings, Path(run_dir), device
        self.world = world = world or distributed.World()
        self.main = world.is_main   # the rank that writes files and prints
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TrainError(f"--run-dir {run_dir}: cannot make the folder ({e.strerror})") from None
        self.metrics_path = self.run_dir / "metrics.jsonl"
        saved = self.saved_state() if resume else None   # a run with nothing left to do stops before it prints
        src, tgt, extra = settings["src"], settings["tgt"], settings.get("extra_source")   # older runs: no extra
        parts, held = read_training(data_dir, src, tgt, extra, settings.get("held_back", 0))
        self.val_src, self.val_tgt = read_split(data_dir, "val", src, tgt)
        print(f"corpus {data_dir} ({src}->{tgt}): {len(parts[0][1])} training and {len(self.val_src)} validation "
              f"pairs" + (f", and {len(parts[1][1])} {extra}->{tgt} training pairs (source tags <{src}>, <{extra}>)"
                          if extra else ""))
        if held:
            print(held_back_summary(held, self.run_dir / HELD_BACK_FILE))
        text = [line for _, s_lines, t_lines in parts for line in s_lines] + parts[0][2]

        if resume:
            self.tok = Tokenizer(self.run_dir / "spm.model", source_tag_language(settings))
            self.config = dict(run.load_config(self.run_dir), settings=settings)
            self.config.update({"blas_threads": blas_threads} if blas_threads else {})
            world.barrier()   # every rank has read the configuration before rank 0 rewrites it
            if self.main:
                run.write_config(self.run_dir, self.config)
        else:
            if self.main:
                tok, note = train_tokenizer(text, self.run_dir / "spm.model", settings["vocab_size"],
                                            tags=(src, extra) if extra else ())
                print(f"tokenizer: joint SentencePiece, {tok.vocab_size} pieces" + (f" ({note})" if note else ""))
            world.barrier()   # the other ranks load the tokenizer that rank 0 has written
            self.tok = tok if self.main else Tokenizer(self.run_dir / "spm.model")
            self.tok.source_lang = source_tag_language(settings)
            model_config = registry.model_config(settings["model"], self.tok.vocab_size, model_kw)
            settings["data_dir"] = str(data_dir)
            self.config = {"settings": settings, "model_config": model_config.to_dict()}
            self.config.update({"blas_threads": blas_threads} if blas_threads else {})
            if self.main:
                run.write_config(self.run_dir, self.config)
                if held:
                    write_held_back(self.run_dir / HELD_BACK_FILE, held)

        self.blas_check = threads.StepCheck(self.config, self.run_dir, world, device)   # more threads than one: faster?
        max_len = self.config["model_config"]["max_len"]
        self.training_pairs = TrainingPairs(self.tok, parts, src, tgt, max_len, settings, world)
        self.train_src, self.train_tgt = self.training_pairs.src, self.training_pairs.tgt
        validation.prepare(self, held, max_len, data_dir)

        mt.manual_seed(settings["seed"])
        self.model = run.build_model(self.config).to(device)
        self.model.train()
        distributed.broadcast_parameters(self.model.parameters(), world)   # the same start on every rank
        if world.rank:   # dropout: each rank its own masks (rank 0 keeps the stream a one-process run has)
            mt.manual_seed(training_state.rank_seed(settings["seed"], world.rank))
        self.stop_request, self.stop_votes = None, 0   # Ctrl-C seen here; ranks that saw it (from the last sync)
        self.stop_file = self.run_dir / STOP_FILE
        flat = mt.nn.utils.FlatParameters(self.model)   # flat buffers: the update, clipping and sum work on them whole
        self.optimizer, self.schedule = make_optimizer(flat, settings["lr"], settings["warmup"],
                                                       self.config["model_config"].get("d_model", 1),
                                                       settings.get("weight_decay", 0.0))  # older runs: none
        sync = distributed.GradientSync(flat, world) if world.size > 1 else None
        step_args = (self.model, self.optimizer, self.schedule, settings["label_smoothing"], settings["clip_norm"],
                     device, sync)
        rdrop = settings.get("rdrop", 0.0)
        self.step_fn = RDropStep(*step_args, alpha=rdrop) if rdrop else TrainStep(*step_args)
        self.step, self.epoch, self.batch_pos, self.best_bleu, self.metrics_lines = 0, 0, 0, -1.0, 0
        self.epoch_loss, self.epoch_tokens = 0.0, 0
        self.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0}
        self.bad_steps, self.epoch_skipped = [], 0   # the current run of skipped steps; skipped this epoch
        if resume:
            if self.main:
                checkpoint.remove_temporary_files(self.run_dir)
            training_state.load_state(self, saved)
        elif self.main:
            self.metrics_path.write_text("")
        print(f"model: {settings['model']} {self.config['model_config']}")
        print(f"parameters: {self.model.num_parameters():,}")

    def saved_state(self):
        """The `last` training state of a run to resume; TrainError when it has finished its epochs or steps."""
        saved = checkpoint.load(checkpoint.checkpoint_path(self.run_dir, "last"), self.device)
        p = saved.get("progress") if isinstance(saved, dict) else None
        p = p if isinstance(p, dict) else {}   # a damaged state is reported when it is loaded
        if p.get("epoch", 0) >= self.s["epochs"]:
            raise TrainError(f"{self.run_dir} has finished its {self.s['epochs']} epoch"
                             f"{'s' if self.s['epochs'] > 1 else ''}; pass a larger --epochs to train on")
        if self.s["max_steps"] is not None and p.get("step", 0) >= self.s["max_steps"]:
            raise TrainError(f"{self.run_dir} is at step {p['step']} already; pass a larger --max-steps")
        return saved

    # ----- the loop -----
    def fit(self):
        s = self.s
        print(f"run folder {self.run_dir}; {len(self.batches(self.epoch))} batches an epoch of about "
              f"{s['batch_tokens']} tokens"
              + (f"; resuming at step {self.step} (epoch {self.epoch + 1})" if self.step else "")
              + (f"; data-parallel over {self.world.size} processes" if self.world.size > 1 else ""))
        if self.main and self.stop_file.is_file():   # left by a run that ended before it saw it
            self.stop_file.unlink()
            print(f"removed {self.stop_file}, left from before")
        self.started, self.val_seconds = time.perf_counter(), 0.0   # this command's wall time, and validation's
        with StopRequest(quiet=not self.main) as stop:
            self.stop_request = stop
            while self.epoch < s["epochs"] and not self.out_of_steps():
                batches = self.batches(self.epoch)
                bar = progress.bar(len(batches), self.batch_pos, f"epoch {self.epoch + 1}/{s['epochs']}", "step",
                                   enabled=self.main)
                while self.batch_pos < len(batches) and not self.out_of_steps():
                    updated = self.train_step(batches[self.batch_pos])
                    bar.update(1)
                    bar.set_postfix_str(self.postfix(len(batches)), refresh=False)
                    if self.stopping(stop):
                        bar.close()
                        return self.stop_here(stop)
                    if len(self.bad_steps) >= MAX_BAD_STEPS:
                        bar.close()
                        raise TrainError(diverged_message(self.bad_steps, self.step, self.run_dir))
                    if updated and s["save_every"] and self.step % s["save_every"] == 0:
                        training_state.save_last(self)
                bar.close()
                partial = self.batch_pos < len(batches)
                record = self.end_of_epoch(partial, stop)
                if record is None:
                    return self.stop_here(stop)
                if partial:
                    print(f"reached --max-steps {s['max_steps']}; continue with --resume and a larger --max-steps")
                    break
        validation.print_examples(self)
        wall = time.perf_counter() - self.started
        print(f"done: best validation BLEU {self.best_bleu:.2f}; checkpoints in {self.run_dir}; validation took "
              f"{self.val_seconds:.0f} s of {wall:.0f} s ({100 * self.val_seconds / max(wall, 1e-9):.0f}%)")
        return 0

    def batches(self, epoch):
        src, tgt = self.training_pairs.of_epoch(epoch)
        return token_batches([len(x) + 1 for x in src], [len(y) + 1 for y in tgt], self.s["batch_tokens"],
                             self.s["seed"], epoch)

    def stop_wanted(self, stop):
        """Has this process been asked to stop: by a signal, or (rank 0, which owns the run folder) a STOP file?"""
        return bool(stop.requested) or (self.main and self.stop_file.is_file())

    def stopping(self, stop):
        """Stop after this step? In a job of several ranks, all stop after the same step: each step's sync counts
        the ranks that had been asked to by then."""
        return self.stop_wanted(stop) if self.world.size == 1 else self.stop_votes > 0

    def out_of_steps(self):
        return self.s["max_steps"] is not None and self.step >= self.s["max_steps"]

    def train_step(self, index):
        """One update on the batch of sentences `index`; False when the batch was skipped for a nan/inf loss or
        gradient norm (the weights, optimizer and schedule are then left as they were)."""
        start = time.perf_counter()
        # each rank takes its share of the batch; its loss is its tokens' sum over the whole batch's token count,
        # so that the ranks' gradients add up to the gradient of the batch's mean loss
        mine = parallel.share(index, self.world)
        train_src, train_tgt = self.training_pairs.of_epoch(self.epoch)
        n_tokens = sum(len(train_tgt[i]) + 1 for i in index)
        batch = (training_batch([train_src[i] for i in mine], [train_tgt[i] for i in mine])
                 if len(mine) else None)
        distributed = self.world.size > 1
        stop_vote = distributed and self.stop_request is not None and self.stop_wanted(self.stop_request)
        lr = self.optimizer.lr
        result = self.step_fn(batch, n_tokens if distributed else None, stop_vote)
        self.stop_votes = result.stop_votes
        self.batch_pos += 1
        if not result.applied:
            bad = "loss" if not math.isfinite(result.loss) else "gradient norm"
            self.skip_step(bad, result.loss if bad == "loss" else result.grad_norm)
            return False
        self.bad_steps = []
        self.step += 1
        self.epoch_loss += result.loss * n_tokens
        self.epoch_tokens += n_tokens
        w = self.window
        w["loss"] += result.loss
        w["steps"] += 1
        w["tokens"] += n_tokens
        w["time"] += (seconds := time.perf_counter() - start)
        self.blas_check.after_step(seconds, n_tokens)
        w["lr"] = lr
        if w["steps"] == self.s["log_every"]:
            self.log_window()
        return True

    def skip_step(self, what, value):
        """Leave out the current batch: its loss or gradient norm is nan or inf."""
        self.optimizer.zero_grad()
        self.bad_steps.append((self.epoch + 1, self.batch_pos, what, value))
        self.epoch_skipped += 1
        if self.main:
            tqdm.write(f"warning: epoch {self.epoch + 1}, batch {self.batch_pos}: the {what} is {value}; skipped "
                       f"this batch ({len(self.bad_steps)} in a row; the run stops at {MAX_BAD_STEPS})",
                       file=sys.stderr)

    def log_window(self):
        """A train record of the steps since the last one (every log_every steps, and at the end of an epoch)."""
        w = self.window
        self.log({"kind": "train", "step": self.step, "epoch": self.epoch + 1, "loss": w["loss"] / w["steps"],
                  "lr": w["lr"], "tokens_per_s": w["tokens"] / w["time"], "s_per_step": w["time"] / w["steps"]})
        self.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0, "last": w["loss"] / w["steps"],
                       "last_steps": w["steps"], "speed": w["tokens"] / w["time"], "step_time": w["time"] / w["steps"],
                       "lr": w["lr"]}

    def postfix(self, n_batches):
        """The progress bar's text (progress.training_postfix) with the steps left in the whole run."""
        steps_left = (self.s["epochs"] - self.epoch) * n_batches - self.batch_pos
        if self.s["max_steps"] is not None:
            steps_left = min(steps_left, self.s["max_steps"] - self.step)
        return progress.training_postfix(self.window, steps_left)

    def end_of_epoch(self, partial, stop):
        """Validate, record, save best/avg/last; None when a Ctrl-C came during validation."""
        if self.window["steps"]:
            self.log_window()
        start = time.perf_counter()
        val = validation.validate(self, stop)
        if val is None:
            return None
        seconds = time.perf_counter() - start
        self.val_seconds += seconds
        record = {"kind": "epoch", "epoch": self.epoch + 1, "step": self.step, "partial": partial,
                  "train_loss": self.epoch_loss / max(self.epoch_tokens, 1), "skipped_batches": self.epoch_skipped,
                  **val, "val_seconds": seconds,
                  "wall_seconds": time.perf_counter() - self.started}   # since this command started (resume: anew)
        self.log(record)
        number = self.epoch + 1
        if val["val_bleu"] > self.best_bleu:
            self.best_bleu = val["val_bleu"]
            if self.main:
                checkpoint.save_model(checkpoint.checkpoint_path(self.run_dir, "best"), self.model, epoch=number,
                                      step=self.step, val_bleu=val["val_bleu"])
        if self.main:
            checkpoint.save_model(self.run_dir / f"epoch-{number}.npz", self.model, epoch=number, step=self.step)
            kept = checkpoint.keep_last_snapshots(self.run_dir, self.s["avg_last"])
            mt.save({"model": checkpoint.average_states(kept), "model_class": type(self.model).__name__,
                     "epochs": [p.stem for p in kept]}, checkpoint.checkpoint_path(self.run_dir, "avg"))
        if not partial:
            self.epoch += 1
            self.batch_pos, self.epoch_loss, self.epoch_tokens, self.epoch_skipped = 0, 0.0, 0, 0
        training_state.save_last(self)
        print(validation.epoch_line(record, number, partial), flush=True)
        return record

    def stop_here(self, stop):
        training_state.save_last(self)
        asked = ""
        if self.main and self.stop_file.is_file():
            self.stop_file.unlink()   # so that the resumed run does not stop at once
            asked = f" as {self.stop_file} asked"
        if self.main:
            print(f"stopped at step {self.step}{asked}; saved {checkpoint.checkpoint_path(self.run_dir, 'last')}. "
                  f"Continue with: {PROG} fit --preset {self.s['preset']} --run-dir {self.run_dir} --resume"
                  + (" --distributed" if self.world.size > 1 else ""), file=sys.stderr)
        return stop.exit_status

    # ----- metrics -----
    def log(self, record):
        if self.main:
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        self.metrics_lines += 1
