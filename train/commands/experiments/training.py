"""Training an experiment's models with `fit` itself: the corpus, tokenizer, loop, checkpoints and validation of a
user's run, so that what an experiment reports is what `python3 -m train fit` gives."""
import argparse
import shutil
import time
from pathlib import Path

from ...data import corpus, demo_corpus
from .. import fit
from ...run.config import config_path
from ...run.presets import PRESETS
from .options import fit_flags


def corpus_dir(args, out):
    """The corpus every model of an experiment trains on: --data-dir, or the demo corpus generated once into
    out/data; None for the preset's default corpus (Multi30k), found the way fit finds it."""
    if args.data_dir:
        return Path(args.data_dir)
    if PRESETS[args.preset].corpus == "demo":
        folder = Path(out) / "data"
        if not corpus.has_splits(folder, demo_corpus.SRC, demo_corpus.TGT):
            demo_corpus.write_demo_corpus(folder)
        return folder
    return None


def train(kind, run_dir, args, data_dir, extra_flags=()):
    """Train a fresh model of `kind` in run_dir (an earlier run there is replaced), with the experiment's training
    flags and extra_flags (fit flags, which win), assembled by fit itself -> (the Trainer, seconds that
    trainer.fit took: training plus the validation after each epoch)."""
    run_dir = Path(run_dir)
    if config_path(run_dir).is_file():
        shutil.rmtree(run_dir)
    parser = argparse.ArgumentParser()
    fit.add_arguments(parser)
    argv = ["--preset", args.preset, "--model", kind, "--run-dir", str(run_dir), "--device", args.device,
            *fit_flags(args), *extra_flags] + (["--data-dir", str(data_dir)] if data_dir is not None else [])
    print(f"\n=== training {kind} in {run_dir} ===", flush=True)
    trainer = fit.build_trainer(parser.parse_args(argv), args.device)
    start = time.perf_counter()
    if trainer.fit() != 0:  # stopped by Ctrl-C (after saving `last`)
        raise KeyboardInterrupt
    return trainer, time.perf_counter() - start
