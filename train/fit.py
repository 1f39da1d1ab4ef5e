"""fit: train a model on a parallel corpus (teacher forcing, label smoothing, Adam with warmup, clipping).

After each epoch: validation loss and greedy validation BLEU, a record in metrics.jsonl, checkpoints `last`, `best`
(by validation BLEU) and `avg` (the average of the last k epochs). `--resume` continues a stopped run exactly where
it stopped: step, optimizer, schedule, random state and the position in the epoch's batch order. Ctrl-C stops after
the current step and saves `last` (so do SIGTERM and a file named STOP in the run folder: `touch RUN_DIR/STOP`, the
way to stop a --distributed job, whose launcher kills its processes a moment after Ctrl-C). A step whose loss or
gradient norm is nan or inf is skipped with a warning; 5 of them in a row stop the run, leaving the last checkpoint
as it was.

On a terminal a progress bar shows the epoch; elsewhere (a log file, a pipe, CI) a plain progress line goes to
stdout every 30 seconds and at the end of each epoch. The BLAS threads are chosen for the preset (see --threads),
printed first and recorded in config.json.
"""
import json
import math
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import minitorch as mt
import minitorch.functional as F
from minitorch import backend, distributed

from . import checkpoint, corpus, demo_corpus, download, metrics, parallel, progress, run, threads
from .arguments import add_device_argument, non_negative_int, positive_float, positive_int, probability
from .batching import token_batches, training_batch
from .decode import MAX_LEN_A, MAX_LEN_B, translate_ids
from .errors import TrainError, UsageError
from .presets import PRESETS, noam_factor
from .tokenizer import PAD_ID, Tokenizer, train_tokenizer

# Flags that override a preset's setting of the same name; a resumed run keeps all of them except these:
OVERRIDES = ("src", "tgt", "vocab_size", "batch_tokens", "epochs", "lr", "warmup", "dropout", "save_every")
CHANGEABLE_ON_RESUME = ("epochs", "max_steps", "save_every")
# Flags that override a preset's model size: flag -> the configuration fields it sets, for each model kind
SIZE_FLAGS = {
    "transformer": {"d_model": ("d_model",), "n_heads": ("n_heads",), "d_ff": ("d_ff",),
                    "layers": ("n_encoder_layers", "n_decoder_layers"), "max_len": ("max_len",)},
    "lstm": {"layers": ("n_layers",), "max_len": ("max_len",)},
}
# the shortest max_len whose decoding limit (MAX_LEN_A * source + MAX_LEN_B) still leaves room for a 1-token source
MIN_MAX_LEN = math.ceil(MAX_LEN_A * 2 + MAX_LEN_B + 1)
MAX_BAD_STEPS = 5  # steps in a row with a nan/inf loss or gradient norm before the run stops
STOP_FILE = "STOP"  # a file of this name in the run folder asks the run to stop after the current step and save
N_EXAMPLES = 3


def add_arguments(p):
    p.add_argument("--preset", required=True, choices=sorted(PRESETS),
                   help="; ".join(f"{name}: {preset.description}" for name, preset in PRESETS.items()))
    p.add_argument("--model", choices=run.MODELS, default=None, help="the architecture (default: transformer)")
    p.add_argument("--src", help="source language: the file suffix, e.g. de (default: the preset's)")
    p.add_argument("--tgt", help="target language, e.g. en (default: the preset's)")
    p.add_argument("--data-dir", help="a corpus folder with train.SRC, train.TGT, val.SRC, val.TGT (plain or .gz); "
                                      "default: Multi30k from $MINITORCH_DATA/multi30k or ~/.cache/minitorch/multi30k")
    p.add_argument("--run-dir", help="where config, tokenizer, metrics and checkpoints go "
                                     "(default: runs/PRESET-SRC-TGT)")
    add_device_argument(p)
    p.add_argument("--epochs", type=positive_int, help="number of epochs (default: the preset's)")
    p.add_argument("--max-steps", type=positive_int, help="stop after this many steps in all, validating at the end")
    p.add_argument("--batch-tokens", type=positive_int, help="padded tokens per batch (default: the preset's)")
    p.add_argument("--seed", type=non_negative_int, help="seed of initialisation, dropout and data order (default 0)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last checkpoint")
    p.add_argument("--vocab-size", type=positive_int, help="joint SentencePiece vocabulary size (default: the "
                                                            "preset's; 8000 for Multi30k)")
    p.add_argument("--lr", type=positive_float, help="peak learning rate, reached at the end of warmup")
    p.add_argument("--warmup", type=positive_int, help="warmup steps of the learning-rate schedule")
    p.add_argument("--dropout", type=probability, help="dropout rate (default: the preset's)")
    p.add_argument("--save-every", type=non_negative_int, help="also save `last` every N steps (0: only at the "
                                                                "end of each epoch)")
    parallel.add_distributed_argument(p)
    threads.add_threads_argument(p)
    sizes = p.add_argument_group("model size (default: the preset's)")
    sizes.add_argument("--d-model", type=positive_int, help="Transformer width; a multiple of --n-heads")
    sizes.add_argument("--n-heads", type=positive_int, help="Transformer attention heads")
    sizes.add_argument("--d-ff", type=positive_int, help="Transformer feed-forward width")
    sizes.add_argument("--layers", type=positive_int, help="encoder and decoder layers each (LSTM: layers)")
    sizes.add_argument("--max-len", type=positive_int, help=f"longest sentence in tokens, at least {MIN_MAX_LEN}; "
                                                            f"longer training pairs are left out")


def main(args):
    if hasattr(sys.stdout, "reconfigure"):   # in a log file each line as it comes, in order with stderr's progress
        sys.stdout.reconfigure(line_buffering=True)
    device = run.check_device(args.device)
    world = parallel.init_world(args.distributed, device)
    with parallel.stop_job_on_error(world, "fit"):
        settings, model_kw, run_dir = resolve_settings(args)
        blas, line = threads.setup(args.preset, args.threads, world)
        print(line)
        world.barrier()   # every rank has checked the run folder before rank 0 writes into it
        data_dir = parallel.main_first(world, lambda: prepare_corpus(settings, run_dir, args.data_dir))
        trainer = Trainer(settings, model_kw, run_dir, data_dir, device, resume=args.resume, world=world,
                          blas_threads=blas)
        return trainer.fit()


def resolve_settings(args):
    """(settings, model keyword arguments, run folder) from the preset and the flags, or from the resumed run."""
    preset = PRESETS[args.preset]
    given = {k: getattr(args, k) for k in OVERRIDES + ("seed", "model", "max_steps") if getattr(args, k) is not None}
    size_flags = {k: getattr(args, k, None) for k in SIZE_FLAGS["transformer"] if getattr(args, k, None) is not None}
    src, tgt = given.get("src", preset.src), given.get("tgt", preset.tgt)
    run_dir = Path(args.run_dir or Path("runs") / f"{preset.name}-{src}-{tgt}")
    run.check_new_run_dir(run_dir)
    if args.resume:
        if not checkpoint.checkpoint_path(run_dir, "last").is_file():
            raise TrainError(f"--resume: {run_dir} holds no last.npz to continue from")
        config = run.load_config(run_dir)
        settings = config["settings"]
        fields = SIZE_FLAGS["transformer" if settings["model"] == "transformer" else "lstm"]
        for key, value in size_flags.items():
            if key not in fields:
                raise UsageError(f"--{key.replace('_', '-')} sets a Transformer size; this run's model is "
                                 f"{settings['model']}")
            has = config["model_config"].get(fields[key][0])
            if has != value:
                raise TrainError(f"--resume: --{key.replace('_', '-')} {value} differs from the run's {has}; a resumed "
                                 f"run keeps its model sizes")
        for key, value in given.items():
            if key not in CHANGEABLE_ON_RESUME and settings.get(key) != value:
                raise TrainError(f"--resume: --{key.replace('_', '-')} {value} differs from the run's "
                                 f"{settings.get(key)}; a resumed run keeps its settings (only --epochs, "
                                 f"--max-steps and --save-every may change)")
        if settings["preset"] != preset.name:
            raise TrainError(f"--resume: {run_dir} was trained with --preset {settings['preset']}, not {preset.name}")
        settings.update({k: given[k] for k in CHANGEABLE_ON_RESUME if k in given})
        settings["max_steps"] = given.get("max_steps")  # a step budget belongs to one command, not to the run
        return settings, None, run_dir
    settings = {k: v for k, v in preset.to_dict().items() if k not in ("name", "description", "model", "lstm")}
    settings.update(preset=preset.name, model="transformer", seed=0, max_steps=None)
    settings.update(given)
    sizes = preset.sizes(settings["model"])
    settings.setdefault("dropout", sizes["dropout"])
    model_kw = dict(sizes, dropout=settings["dropout"])
    model_kw.update(check_sizes(settings["model"], size_flags, model_kw, preset.name))
    if checkpoint.checkpoint_path(run_dir, "last").is_file():  # a folder without it holds no training to lose
        raise TrainError(existing_run_message(run_dir))
    return settings, model_kw, run_dir


def check_sizes(kind, size_flags, model_kw, preset):
    """The configuration fields that the size flags set; UsageError (exit status 2) when they cannot make a model."""
    fields = SIZE_FLAGS["transformer" if kind == "transformer" else "lstm"]
    for key in size_flags:
        if key not in fields:
            raise UsageError(f"--{key.replace('_', '-')} sets a Transformer size; --model {kind} takes only "
                             f"{', '.join('--' + k.replace('_', '-') for k in fields)}")
    out = {field: value for key, value in size_flags.items() for field in fields[key]}
    sizes = dict(model_kw, **out)
    if "max_len" in size_flags and sizes["max_len"] < MIN_MAX_LEN:
        raise UsageError(f"--max-len {sizes['max_len']} is too short: at least {MIN_MAX_LEN} tokens, so that "
                         f"decoding has room for {MAX_LEN_A} x the source length + {MAX_LEN_B}")
    if kind == "transformer" and sizes["d_model"] % sizes["n_heads"]:
        def origin(key):
            return f"--{key.replace('_', '-')} {sizes[key]}" if key in size_flags else \
                f"{key} {sizes[key]} of --preset {preset}"
        raise UsageError(f"{origin('d_model')} is not divisible by {origin('n_heads')}: each head takes "
                         f"d_model / n_heads dimensions")
    try:
        run.model_config(kind, 8, sizes)  # any vocabulary size: only the sizes are checked here
    except TrainError as e:
        raise UsageError(str(e)) from None
    return out


def existing_run_message(run_dir):
    """Why fit (without --resume) will not start in a folder that holds a run, and what to do instead."""
    afresh = "or start afresh in another --run-dir (or delete the folder)"
    try:
        progress = checkpoint.load(checkpoint.checkpoint_path(run_dir, "last"))["progress"]
        epochs = run.load_config(run_dir)["settings"]["epochs"]
    except (TrainError, KeyError, TypeError):
        return f"{run_dir} already holds a run; add --resume to continue it, {afresh}"
    if progress["epoch"] >= epochs:
        return (f"{run_dir} already holds a run that finished its {epochs} epoch{'s' if epochs > 1 else ''}; "
                f"translate or evaluate with it (--run-dir {run_dir}), train it further with --resume --epochs N, "
                f"{afresh}")
    return (f"{run_dir} already holds a run stopped at step {progress['step']} (epoch {progress['epoch'] + 1} of "
            f"{epochs}); add --resume to continue it, {afresh}")


def prepare_corpus(settings, run_dir, data_dir):
    """The corpus folder: --data-dir, the generated demo corpus (inside the run folder), or Multi30k."""
    if "data_dir" in settings:  # a resumed run reads what it read before
        if data_dir is not None and Path(data_dir).resolve() != Path(settings["data_dir"]):
            raise TrainError(f"--resume: --data-dir {data_dir} differs from the run's {settings['data_dir']}")
        return Path(settings["data_dir"])
    src, tgt = settings["src"], settings["tgt"]
    if data_dir is None and settings["corpus"] == "demo":
        if (src, tgt) != (demo_corpus.SRC, demo_corpus.TGT):
            raise TrainError(f"the demo corpus is {demo_corpus.SRC}->{demo_corpus.TGT}; drop --src/--tgt, or pass "
                             f"--data-dir for another corpus")
        folder = Path(run_dir) / "data"
        if not corpus.has_splits(folder, src, tgt):
            demo_corpus.write_demo_corpus(folder)
            print(f"generated the demo corpus in {folder}: English and `toy`, a language invented for the demo "
                  f"(see train/demo_corpus.py)")
        return folder.resolve()
    return corpus.find_corpus(data_dir, src, tgt, download=download.download_multi30k).resolve()


class StopRequest:
    """Ctrl-C (SIGINT) or SIGTERM asks training to stop after the current step; a second one stops at once, without
    saving (the `last` on disk is then the previous one, intact: saves are atomic)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, quiet=False):
        self.requested = None   # the number of the signal that asked, once one has
        self.previous, self.quiet = {}, quiet

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self._handler) for sig in self.SIGNALS}
        return self

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = signum
        if not self.quiet:
            tqdm.write("stopping after this step, then saving `last` (Ctrl-C again to quit without saving)",
                       file=sys.stderr)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}

    @property
    def exit_status(self):
        """128 + the signal's number, as a shell reports a process stopped by it (130 for Ctrl-C)."""
        return 128 + int(self.requested or signal.SIGINT)


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
        src, tgt = settings["src"], settings["tgt"]
        train_src, train_tgt = read_split(data_dir, "train", src, tgt)
        self.val_src, self.val_tgt = read_split(data_dir, "val", src, tgt)
        print(f"corpus {data_dir} ({src}->{tgt}): {len(train_src)} training and {len(self.val_src)} validation pairs")

        if resume:
            self.tok = Tokenizer(self.run_dir / "spm.model")
            self.config = dict(run.load_config(self.run_dir), settings=settings)
            # the threads of this command, which may differ from those of the command that started the run
            self.config.update({"blas_threads": blas_threads} if blas_threads else {})
            world.barrier()   # every rank has read the configuration before rank 0 rewrites it
            if self.main:
                run.write_config(self.run_dir, self.config)
        else:
            if self.main:
                tok, note = train_tokenizer(train_src + train_tgt, self.run_dir / "spm.model", settings["vocab_size"])
                print(f"tokenizer: joint SentencePiece, {tok.vocab_size} pieces" + (f" ({note})" if note else ""))
            world.barrier()   # the other ranks load the tokenizer that rank 0 has written
            self.tok = tok if self.main else Tokenizer(self.run_dir / "spm.model")
            model_config = run.model_config(settings["model"], self.tok.vocab_size, model_kw)
            settings["data_dir"] = str(data_dir)
            self.config = {"settings": settings, "model_config": model_config.to_dict()}
            self.config.update({"blas_threads": blas_threads} if blas_threads else {})
            if self.main:
                run.write_config(self.run_dir, self.config)

        max_len = self.config["model_config"]["max_len"]
        self.train_src, self.train_tgt = encode_pairs(self.tok, train_src, train_tgt, max_len, "training")
        self.val_pairs = encode_pairs(self.tok, self.val_src, self.val_tgt, max_len, "validation")
        for split, pairs in (("train", self.train_src), ("val", self.val_pairs[0])):
            if not pairs:
                raise TrainError(f"{data_dir}: the {split} split has no sentence pair of at most {max_len - 1} "
                                 f"tokens (max_len {max_len}) on both sides")
        self.n_bleu = min(settings["val_bleu_sentences"] or len(self.val_src), len(self.val_src))
        self.val_bleu_ids = self.tok.encode(self.val_src[:self.n_bleu])

        mt.manual_seed(settings["seed"])
        self.model = run.build_model(self.config).to(device)
        self.model.train()
        distributed.broadcast_parameters(self.model.parameters(), world)   # the same start on every rank
        if world.rank:   # dropout: each rank its own masks (rank 0 keeps the stream a one-process run has)
            mt.manual_seed(rank_seed(settings["seed"], world.rank))
        self.sync = distributed.GradientSync(self.model.parameters(), world)
        self.stop_request, self.stop_votes = None, 0   # Ctrl-C seen here; ranks that saw it (from the last sync)
        self.stop_file = self.run_dir / STOP_FILE
        # noam_factor makes the peak lr whatever d_model is, so a model without one (an LSTM) gets the same curve
        d_model = self.config["model_config"].get("d_model", 1)
        self.optimizer = mt.optim.Adam(self.model.parameters(), lr=settings["lr"], betas=(0.9, 0.98), eps=1e-9)
        self.schedule = mt.optim.WarmupSchedule(self.optimizer, d_model, settings["warmup"],
                                                noam_factor(settings["lr"], d_model, settings["warmup"]))
        self.src_lens = [len(x) + 1 for x in self.train_src]
        self.tgt_lens = [len(y) + 1 for y in self.train_tgt]
        self.step, self.epoch, self.batch_pos, self.best_bleu, self.metrics_lines = 0, 0, 0, -1.0, 0
        self.epoch_loss, self.epoch_tokens = 0.0, 0
        self.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0}
        self.bad_steps, self.epoch_skipped = [], 0   # the current run of skipped steps; skipped this epoch
        if resume:
            if self.main:
                checkpoint.remove_temporary_files(self.run_dir)
            self.load_state(checkpoint.load(checkpoint.checkpoint_path(self.run_dir, "last"), device))
        elif self.main:
            self.metrics_path.write_text("")
        n_params = sum(p.numel() for p in self.model.parameters())
        print(f"model: {settings['model']} {self.config['model_config']}")
        print(f"parameters: {n_params:,}")

    # ----- the loop -----
    def fit(self):
        s = self.s
        if self.epoch >= s["epochs"]:
            raise TrainError(f"{self.run_dir} has finished its {s['epochs']} epochs; pass a larger --epochs to train "
                             f"on")
        if self.out_of_steps():
            raise TrainError(f"{self.run_dir} is at step {self.step} already; pass a larger --max-steps")
        print(f"run folder {self.run_dir}; {len(self.batches(0))} batches an epoch of about {s['batch_tokens']} tokens"
              + (f"; resuming at step {self.step} (epoch {self.epoch + 1})" if self.step else "")
              + (f"; data-parallel over {self.world.size} processes" if self.world.size > 1 else ""))
        if self.main and self.stop_file.is_file():   # left by a run that ended before it saw it
            self.stop_file.unlink()
            print(f"removed {self.stop_file}, left from before")
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
                        raise TrainError(self.diverged_message())
                    if updated and s["save_every"] and self.step % s["save_every"] == 0:
                        self.save_last()
                bar.close()
                partial = self.batch_pos < len(batches)
                record = self.end_of_epoch(partial, stop)
                if record is None:
                    return self.stop_here(stop)
                if partial:
                    print(f"reached --max-steps {s['max_steps']}; continue with --resume and a larger --max-steps")
                    break
        self.print_examples()
        print(f"done: best validation BLEU {self.best_bleu:.2f}; checkpoints in {self.run_dir}")
        return 0

    def batches(self, epoch):
        return token_batches(self.src_lens, self.tgt_lens, self.s["batch_tokens"], self.s["seed"], epoch)

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
        n_tokens = sum(self.tgt_lens[i] for i in index)
        self.optimizer.zero_grad()
        loss_value = 0.0
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # non-finite values are handled below
            if len(mine):
                src, tgt_in, tgt_out = (backend.to_device(a, self.device) for a in training_batch(
                    [self.train_src[i] for i in mine], [self.train_tgt[i] for i in mine]))
                loss = self.loss(src, tgt_in, tgt_out, n_tokens if self.world.size > 1 else None)
                loss.backward()
                loss_value = float(loss.item())
            if self.world.size > 1:
                stop_vote = self.stop_request is not None and self.stop_wanted(self.stop_request)
                loss_value, self.stop_votes = self.sync([loss_value, stop_vote])
            grad_norm = mt.nn.utils.clip_grad_norm_(self.model.parameters(), self.s["clip_norm"])
        self.batch_pos += 1
        if not (math.isfinite(loss_value) and math.isfinite(grad_norm)):
            self.skip_step("loss" if not math.isfinite(loss_value) else "gradient norm",
                           loss_value if not math.isfinite(loss_value) else grad_norm)
            return False
        self.bad_steps = []
        lr = self.optimizer.lr
        self.optimizer.step()
        self.schedule.step()
        self.step += 1
        self.epoch_loss += loss_value * n_tokens
        self.epoch_tokens += n_tokens
        w = self.window
        w["loss"] += loss_value
        w["steps"] += 1
        w["tokens"] += n_tokens
        w["time"] += time.perf_counter() - start
        w["lr"] = lr
        if w["steps"] == self.s["log_every"]:
            self.log_window()
        return True

    def loss(self, src, tgt_in, tgt_out, n_tokens=None):
        """The label-smoothed cross-entropy of one batch (a scalar tensor): the mean over its target tokens, or their
        sum over n_tokens (the token count of the whole batch, when this is one rank's share of it)."""
        return parallel.share_loss(self.model(src, tgt_in), tgt_out, self.s["label_smoothing"], n_tokens)

    def skip_step(self, what, value):
        """Leave out the current batch: its loss or gradient norm is nan or inf."""
        self.optimizer.zero_grad()
        self.bad_steps.append((self.epoch + 1, self.batch_pos, what, value))
        self.epoch_skipped += 1
        if self.main:
            tqdm.write(f"warning: epoch {self.epoch + 1}, batch {self.batch_pos}: the {what} is {value}; skipped "
                       f"this batch ({len(self.bad_steps)} in a row; the run stops at {MAX_BAD_STEPS})",
                       file=sys.stderr)

    def diverged_message(self):
        """Why the run stopped after MAX_BAD_STEPS skipped steps in a row, and which checkpoint is left."""
        last = checkpoint.checkpoint_path(self.run_dir, "last")
        if last.is_file():
            kept = f"{last} is left as the last good checkpoint"
            try:
                kept += f" (step {checkpoint.load(last)['progress']['step']})"
            except (TrainError, KeyError, TypeError):
                pass
        else:
            kept = "No checkpoint had been saved yet"
        epoch, batch, what, value = self.bad_steps[-1]
        return (f"stopped: {len(self.bad_steps)} batches in a row gave a non-finite loss or gradient norm (the last, "
                f"epoch {epoch} batch {batch}: {what} {value}) after step {self.step}; the model has diverged or "
                f"the data is broken. {kept}. Try a lower --lr in a new --run-dir")

    def log_window(self):
        """A train record of the steps since the last one (every log_every steps, and at the end of an epoch)."""
        w = self.window
        self.log({"kind": "train", "step": self.step, "epoch": self.epoch + 1, "loss": w["loss"] / w["steps"],
                  "lr": w["lr"], "tokens_per_s": w["tokens"] / w["time"], "s_per_step": w["time"] / w["steps"]})
        self.window = {"loss": 0.0, "steps": 0, "tokens": 0, "time": 0.0, "last": w["loss"] / w["steps"],
                       "speed": w["tokens"] / w["time"], "step_time": w["time"] / w["steps"], "lr": w["lr"]}

    def postfix(self, n_batches):
        """loss, learning rate, speed and the time left for the whole run (the bar itself shows the epoch's)."""
        w = self.window
        loss = w["loss"] / w["steps"] if w["steps"] else w.get("last", float("nan"))
        speed = w["tokens"] / w["time"] if w["steps"] else w.get("speed", 0.0)
        steps_left = (self.s["epochs"] - self.epoch) * n_batches - self.batch_pos
        if self.s["max_steps"] is not None:
            steps_left = min(steps_left, self.s["max_steps"] - self.step)
        seconds = steps_left * (w["time"] / w["steps"] if w["steps"] else w.get("step_time", float("nan")))
        eta = f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}" \
            if math.isfinite(seconds) else "?"
        return f"label-smoothed loss {loss:.3f}, lr {w.get('lr', 0):.2e}, {speed:,.0f} tok/s, run ETA {eta}"

    def end_of_epoch(self, partial, stop):
        """Validate, record, save best/avg/last; None when a Ctrl-C came during validation."""
        if self.window["steps"]:
            self.log_window()
        val = self.validate(stop)
        if val is None:
            return None
        record = {"kind": "epoch", "epoch": self.epoch + 1, "step": self.step, "partial": partial,
                  "train_loss": self.epoch_loss / max(self.epoch_tokens, 1), "skipped_batches": self.epoch_skipped,
                  **val}
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
        self.save_last()
        print(epoch_line(record, number, partial), flush=True)
        return record

    def validate(self, stop):
        """Validation loss (label-smoothed and plain NLL) and greedy BLEU/chrF; None if stopped by Ctrl-C.

        In a job of several ranks each takes a share of the batches and sentences, and the sums and translations are
        gathered, so that every rank gets the same figures; a Ctrl-C then takes effect at the end of validation."""
        self.model.eval()
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a diverged model: nan, no noise
                total, nll, tokens = 0.0, 0.0, 0
                val_src, val_tgt = self.val_pairs
                lens = [len(x) + 1 for x in val_src], [len(y) + 1 for y in val_tgt]
                with mt.no_grad():
                    batches = token_batches(*lens, self.s["batch_tokens"], shuffle=False)
                    for index in parallel.share(batches, self.world):
                        if stop.requested and self.world.size == 1:
                            return None
                        src, tgt_in, tgt_out = (backend.to_device(a, self.device) for a in training_batch(
                            [val_src[i] for i in index], [val_tgt[i] for i in index]))
                        logits = self.model(src, tgt_in)
                        total += float(F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, reduction="sum",
                                                       label_smoothing=self.s["label_smoothing"]).item())
                        nll += float(F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, reduction="sum").item())
                        tokens += int((tgt_out != PAD_ID).sum())
                sums = self.world.allreduce_sum_(np.array([total, nll, tokens], dtype=np.float64))
                total, nll, tokens = float(sums[0]), float(sums[1]), int(sums[2])
                n = self.n_bleu
                hyp_ids = translate_ids(self.model, self.val_bleu_ids, beam=1, batch_tokens=self.s["batch_tokens"],
                                        device=self.device, progress=self.main, world=self.world)
                if self.world.any(stop.requested):
                    return None
        finally:
            self.model.train()
        hyps, refs = self.tok.decode(hyp_ids), self.val_tgt[:n]
        self.examples = list(zip(self.val_src[:N_EXAMPLES], refs[:N_EXAMPLES], hyps[:N_EXAMPLES]))
        bleu, bleu_sig = metrics.bleu(hyps, refs)
        chrf, chrf_sig = metrics.chrf(hyps, refs)
        return {"val_loss": total / tokens, "val_nll": nll / tokens, "val_ppl": math.exp(min(nll / tokens, 50)),
                "val_bleu": bleu, "val_chrf": chrf, "val_bleu_sentences": n, "decoding": "greedy",
                "bleu_signature": bleu_sig, "chrf_signature": chrf_sig}

    def print_examples(self):
        for src, ref, hyp in getattr(self, "examples", []):
            print(f"\n  source:     {src}\n  reference:  {ref}\n  hypothesis: {hyp}")
        if getattr(self, "examples", None):
            print(f"\ntranslate more with: python -m train translate --run-dir {self.run_dir} < {self.s['src']}.txt")

    def stop_here(self, stop):
        self.save_last()
        asked = ""
        if self.main and self.stop_file.is_file():
            self.stop_file.unlink()   # so that the resumed run does not stop at once
            asked = f" as {self.stop_file} asked"
        if self.main:
            print(f"stopped at step {self.step}{asked}; saved {checkpoint.checkpoint_path(self.run_dir, 'last')}. "
                  f"Continue with: python -m train fit --preset {self.s['preset']} --run-dir {self.run_dir} --resume"
                  + (" --distributed" if self.world.size > 1 else ""), file=sys.stderr)
        return stop.exit_status

    # ----- metrics and state -----
    def log(self, record):
        if self.main:
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        self.metrics_lines += 1

    def state(self):
        """The whole training state (in a job of several ranks, a collective: it gathers their random states)."""
        rng = {"rng": backend.get_rng_state()}
        if self.world.size > 1:
            ranks = self.world.allgather_object(rng["rng"])
            rng = {"rng": ranks[0], "rng_ranks": ranks}
        return {"model": self.model.state_dict(), "model_class": type(self.model).__name__,
                "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(), **rng,
                "progress": {"step": self.step, "epoch": self.epoch, "batch_pos": self.batch_pos,
                             "best_bleu": self.best_bleu, "metrics_lines": self.metrics_lines,
                             "epoch_loss": self.epoch_loss, "epoch_tokens": self.epoch_tokens,
                             "window": self.window, "epoch_skipped": self.epoch_skipped}}

    def save_last(self):
        state = self.state()
        if self.main:
            mt.save(state, checkpoint.checkpoint_path(self.run_dir, "last"))

    def load_state(self, state):
        path = checkpoint.checkpoint_path(self.run_dir, "last")
        checkpoint.load_weights(self.model, path, state)
        try:
            self.optimizer.load_state_dict(state["optimizer"])
            self.schedule.load_state_dict(state["schedule"])
            self.load_rng(state)
            p = state["progress"]
            self.step, self.epoch, self.batch_pos = p["step"], p["epoch"], p["batch_pos"]
            self.best_bleu, self.metrics_lines = p["best_bleu"], p["metrics_lines"]
            self.epoch_loss, self.epoch_tokens, self.window = p["epoch_loss"], p["epoch_tokens"], p["window"]
            self.epoch_skipped = p.get("epoch_skipped", 0)
        except (KeyError, ValueError, TypeError) as e:
            raise TrainError(f"{path}: not a training state that this run can continue from ({type(e).__name__}: "
                             f"{e}); it holds model weights only, or was written by another version") from None
        if not self.main:
            return
        # records written after the checkpoint (by a run that was killed) are dropped, so none appears twice
        lines = self.metrics_path.read_text(encoding="utf-8").splitlines(keepends=True) \
            if self.metrics_path.is_file() else []
        self.metrics_path.write_text("".join(lines[:self.metrics_lines]), encoding="utf-8")

    def load_rng(self, state):
        """Each rank's random state from the checkpoint; a rank that the saving job did not have (it had fewer
        ranks) draws a fresh one from the seed, its rank and the step."""
        ranks = state.get("rng_ranks") or [state["rng"]]
        if self.world.rank < len(ranks) and (self.world.rank == 0 or len(ranks) == self.world.size):
            backend.set_rng_state(ranks[self.world.rank])
        else:
            mt.manual_seed(rank_seed(self.s["seed"], self.world.rank, state["progress"]["step"]))


def epoch_line(record, number, partial=False):
    """The line printed after an epoch: each loss named, the perplexity beside the NLL it is the exponential of."""
    return (f"epoch {number}{' (partial)' if partial else ''}, step {record['step']}: label-smoothed loss: train "
            f"{record['train_loss']:.3f}, val {record['val_loss']:.3f}; val nll {record['val_nll']:.3f} (ppl "
            f"{record['val_ppl']:.2f}); greedy val BLEU {record['val_bleu']:.2f}, chrF {record['val_chrf']:.2f} on "
            f"{record['val_bleu_sentences']} sentences")


def rank_seed(seed, rank, step=0):
    """The seed of a rank's random numbers (dropout) in a data-parallel job: distinct for each rank and start."""
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])


def read_split(data_dir, split, src, tgt):
    """The aligned lines of one split without the pairs that have an empty side (their count is printed);
    TrainError when no pair is left."""
    src_lines, tgt_lines = corpus.read_parallel(data_dir, split, src, tgt)
    kept_src, kept_tgt, empty = corpus.drop_empty_pairs(src_lines, tgt_lines)
    files = f"{split}.{src}/{split}.{tgt}"
    if not kept_src:
        raise TrainError(f"{data_dir}: {files} hold no sentence pairs" + (
            f" ({len(src_lines)} lines, each with an empty side)" if src_lines else " (the files are empty)"))
    if empty:
        print(f"left out {len(empty)} of {len(src_lines)} {files} pairs with an empty side (lines "
              f"{corpus.line_list(empty)})")
    return kept_src, kept_tgt


def encode_pairs(tok, src_lines, tgt_lines, max_len, name):
    """(source ids, target ids) of the pairs whose sides both have 1 to max_len - 1 tokens; the count of those left
    out is printed."""
    src_ids, tgt_ids = tok.encode(src_lines), tok.encode(tgt_lines)
    keep, too_long, no_tokens = [], 0, 0
    for i, (x, y) in enumerate(zip(src_ids, tgt_ids)):
        if not (x and y):
            no_tokens += 1
        elif len(x) >= max_len or len(y) >= max_len:
            too_long += 1
        else:
            keep.append(i)
    if too_long:
        print(f"left out {too_long} of {len(src_ids)} {name} pairs longer than {max_len - 1} tokens "
              f"(max_len {max_len})")
    if no_tokens:
        print(f"left out {no_tokens} of {len(src_ids)} {name} pairs with a side that gives no tokens")
    return [src_ids[i] for i in keep], [tgt_ids[i] for i in keep]
