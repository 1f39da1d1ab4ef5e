"""sweep: a recipe study from a grid file, scored on the validation split only.

Each trial trains a model with `fit` (the preset plus the trial's fit flags), then decodes the validation split with
every decoding setting of the grid (checkpoint x beam x length penalty) and scores it with sacreBLEU. No test split is
read: a study chooses on validation, and the chosen recipe is scored on the test set once, afterwards, with evaluate.

The grid file (JSON):
    {"base":     {"epochs": 3},                            fit flags of every trial (names as fit's, - or _)
     "trials":   {"dropout-0.3": {"dropout": 0.3},         a name -> the flags that make this trial different
                  "bpe-4000":    {"vocab_size": 4000}},
     "decoding": {"checkpoint": ["best", "avg"], "beam": [5], "length_penalty": [0.6, 1.0]}}

A trial {"run_dir": PATH} is a run trained elsewhere (e.g. a finalist trained with `mpirun -n 2 python3 -m train fit
... --distributed`): it is not trained, only scored with the grid's decodings, its settings read from its config.json
and its minutes from its metrics (the last epoch's wall_seconds).

Writes sweep.md (a row per trial: its settings, the best validation BLEU and the decoding that gave it, the BLEU of
the held-back slice of training pairs (fit --held-back; "-" without) decoded the same way, validation perplexity,
wall time), sweep.json (every decoding of every trial) and keeps the runs in OUT/runs/TRIAL. A trial whose
results are already in sweep.json is not trained again, so an interrupted sweep continues where it stopped.
"""
import argparse
import itertools
import json
import time
from pathlib import Path

from ...run import checkpoint, run_folder
from ...run.config import config_path, read_config
from ...data import corpus, held_back
from .. import fit
from ...evaluation import metrics
from ...evaluation.decode import translate_lines
from ...cli.errors import TrainError, UsageError
from ...run.presets import PRESETS
from ...run.resolve import fit_defaults
from . import results, training
from .options import add_training_arguments

DECODING = {"checkpoint": ["best"], "beam": [5], "length_penalty": [0.6]}


def add_arguments(p):
    p.add_argument("--grid", required=True, help="the grid file (JSON: base, trials, decoding; see above)")
    add_training_arguments(p, preset="small")


def read_grid(path):
    """The grid file -> (base flags, {trial: flags}, decoding lists); UsageError naming the file and the key."""
    try:
        grid = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"--grid {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--grid {path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(grid, dict) or not isinstance(grid.get("trials"), dict) or not grid["trials"]:
        raise UsageError(f"--grid {path}: expected an object with a non-empty \"trials\" object")
    unknown = set(grid) - {"base", "trials", "decoding"}
    if unknown:
        raise UsageError(f"--grid {path}: unknown key {sorted(unknown)[0]!r} (expected base, trials, decoding)")
    flags = fit_flag_names()
    for where, trial in [("base", grid.get("base", {}))] + [(f"trials.{k}", v) for k, v in grid["trials"].items()]:
        if not isinstance(trial, dict):
            raise UsageError(f"--grid {path}: {where} must be an object of fit flags")
        if where != "base" and "run_dir" in trial:
            if set(trial) != {"run_dir"}:
                raise UsageError(f"--grid {path}: {where}: run_dir takes no other keys (the run's own settings are "
                                 f"used)")
            if not config_path(Path(trial["run_dir"])).is_file():
                raise UsageError(f"--grid {path}: {where}: a trial with run_dir is a finished run folder to score "
                                 f"({trial['run_dir']} holds no config.json)")
            continue
        for key in trial:
            if key.replace("-", "_") not in flags:
                raise UsageError(f"--grid {path}: {where}: {key!r} is not a fit flag (fit takes "
                                 f"{', '.join(sorted(f.replace('_', '-') for f in flags))})")
    decoding = dict(DECODING, **grid.get("decoding", {}))
    for key, values in decoding.items():
        if key not in DECODING or not isinstance(values, list) or not values:
            raise UsageError(f"--grid {path}: decoding.{key}: expected a non-empty list for one of "
                             f"{', '.join(DECODING)}")
    return grid.get("base", {}), grid["trials"], decoding


def fit_flag_names():
    """The flags `fit` takes that a trial may set (not the ones a sweep sets itself)."""
    parser = argparse.ArgumentParser()
    fit.add_arguments(parser)
    own = {"run-dir", "data-dir", "device", "resume", "help", "preset", "distributed"}
    return {o[2:].replace("-", "_") for a in parser._actions for o in a.option_strings
            if o.startswith("--") and o[2:] not in own}


def as_flags(values):
    """{"vocab_size": 4000, "resume": True} -> ["--vocab-size", "4000", "--resume"]."""
    flags = []
    for key, value in values.items():
        name = "--" + key.replace("_", "-")
        flags += [name] if value is True else [] if value is False else [name, str(value)]
    return flags


def main(args, out):
    base, trials, decoding = read_grid(args.grid)
    data_dir = training.corpus_dir(args, out)
    done_path = out / "sweep.json"
    done = json.loads(done_path.read_text())["trials"] if done_path.is_file() else {}
    wanted = list(itertools.product(decoding["checkpoint"], decoding["beam"], decoding["length_penalty"]))
    for name, flags in trials.items():
        if name in done and (done[name].get("run_dir") == flags["run_dir"] if "run_dir" in flags else
                             done[name]["settings"] == dict(base, **flags)):
            have = {(r["checkpoint"], r["beam"], r["length_penalty"]) for r in done[name]["decodings"]}
            missing = [d for d in wanted if d not in have]
            print(f"trial {name}: already in {done_path}" + (f"; scoring {len(missing)} more decodings"
                                                              if missing else ""))
            if missing:
                done[name]["decodings"] += score_on_validation(done[name].get("run_dir", out / "runs" / name),
                                                               missing, args.device)
        elif "run_dir" in flags:
            done[name] = score_run(Path(flags["run_dir"]), wanted, args.device)
        else:
            start = time.perf_counter()
            trainer, _ = training.train("transformer", out / "runs" / name, args, data_dir,
                                        extra_flags=as_flags(dict(base, **flags)))
            epochs = epoch_records(trainer.run_dir)
            done[name] = {"settings": dict(base, **flags),
                          "decodings": score_on_validation(trainer.run_dir, wanted, args.device),
                          "val_ppl": epochs[-1]["val_ppl"] if epochs else None, "steps": trainer.step,
                          "wall_minutes": (time.perf_counter() - start) / 60}
        top = top_decoding(done[name]["decodings"])
        top = [top["checkpoint"], top["beam"], top["length_penalty"]]
        if done[name].get("held_back", {}).get("decoding") != top:   # the held-back slice, with val's best decoding
            done[name]["held_back"] = score_held_back(done[name].get("run_dir", out / "runs" / name), top,
                                                      args.device)
        done_path.write_text(json.dumps(results.finite_or_none(
            {"grid": str(args.grid), "preset": args.preset, "trials": done}), indent=1) + "\n")
    rows = [[name, " ".join(as_flags({k: v for k, v in t["settings"].items()
                                      if k not in base or t.get("run_dir")})) or "(base)",
             *best(t["decodings"]), t.get("held_back", {}).get("bleu"), t["val_ppl"], t["wall_minutes"]]
            for name, t in done.items() if name in trials]
    table = results.markdown_table(["trial", "settings", "val BLEU", "decoding", "held-back BLEU", "val ppl",
                                    "minutes"], rows)
    (out / "sweep.md").write_text(f"Base: {' '.join(as_flags(base)) or '(the preset)'}; preset {args.preset}; "
                                  f"scored on the validation split only.\n\n" + table, encoding="utf-8")
    print("\n" + table)
    return 0


def epoch_records(run_dir):
    return [r for r in map(json.loads, (Path(run_dir) / "metrics.jsonl").read_text().splitlines())
            if r["kind"] == "epoch"]


def score_run(run_dir, decodings, device):
    """A run trained elsewhere, scored on validation: its own settings (those that differ from its preset), steps
    and wall minutes (from its metrics; None for runs from before they were recorded)."""
    config = read_config(run_dir)
    plain = fit_defaults(PRESETS[config.settings.preset]).to_dict()   # what `fit --preset P` alone would use
    own = {k: v for k, v in config.settings.to_dict().items() if k in fit_flag_names() and plain.get(k) != v}
    epochs = epoch_records(run_dir)
    wall = epochs[-1].get("wall_seconds") if epochs else None
    return {"settings": own, "run_dir": str(run_dir), "decodings": score_on_validation(run_dir, decodings, device,
                                                                                       config),
            "val_ppl": epochs[-1]["val_ppl"] if epochs else None, "steps": epochs[-1]["step"] if epochs else 0,
            "wall_minutes": None if wall is None else wall / 60}


def score_on_validation(run_dir, decodings, device, config=None):
    """BLEU on the run's validation split for each (checkpoint, beam, length_penalty) -> a list of records; config:
    the run's RunConfig where the caller has read it."""
    config = config or read_config(run_dir)
    s = config.settings
    sources, references = corpus.read_parallel(Path(s.data_dir), "val", s.src, s.tgt)
    tokenizer = run_folder.load_tokenizer(run_dir, s)
    records = []
    for name in dict.fromkeys(d[0] for d in decodings):
        if not checkpoint.checkpoint_path(run_dir, name).is_file():
            raise TrainError(f"{run_dir}: no {name} checkpoint to score (the grid's decoding.checkpoint)")
        model = run_folder.load_model(run_dir, config, name, device)
        for _, beam, alpha in [d for d in decodings if d[0] == name]:
            hyps = translate_lines(model, tokenizer, sources, beam=beam, length_penalty=alpha, device=device,
                                   progress=False)
            bleu, signature = metrics.bleu(hyps, references)
            records.append({"checkpoint": name, "beam": beam, "length_penalty": alpha, "val_bleu": bleu,
                            "val_chrf": metrics.chrf(hyps, references)[0], "bleu_signature": signature})
            print(f"  {run_dir}: {name}, beam {beam}, lp {alpha}: val BLEU {bleu:.2f}", flush=True)
    return records


def score_held_back(run_dir, decoding, device):
    """{decoding, bleu, chrf, sentences} of the run's held-back slice (fit --held-back) decoded with decoding
    [checkpoint, beam, length penalty]; bleu None for a run without one."""
    config = read_config(run_dir)
    pairs = held_back.read_slice(run_dir, config.settings)
    if pairs is None:
        return {"decoding": decoding, "bleu": None}
    name, beam, alpha = decoding
    model, tokenizer = run_folder.load_model(run_dir, config, name, device), run_folder.load_tokenizer(run_dir,
                                                                                                       config.settings)
    hyps = translate_lines(model, tokenizer, pairs[0], beam=beam, length_penalty=alpha, device=device, progress=False)
    bleu = metrics.bleu(hyps, pairs[1])[0]
    print(f"  {run_dir}: held-back slice, {name}, beam {beam}, lp {alpha}: BLEU {bleu:.2f}", flush=True)
    return {"decoding": decoding, "bleu": bleu, "chrf": metrics.chrf(hyps, pairs[1])[0], "sentences": len(hyps)}


def top_decoding(decodings):
    """The record of the decoding with the highest validation BLEU."""
    return max(decodings, key=lambda r: r["val_bleu"])


def best(decodings):
    """(the highest validation BLEU, the decoding that gave it as text)."""
    top = top_decoding(decodings)
    return top["val_bleu"], f"{top['checkpoint']}, beam {top['beam']}, lp {top['length_penalty']}"
