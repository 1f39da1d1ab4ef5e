"""Whether two run folders trained the same run, bit for bit: their metrics.jsonl records (timings left out) and the
arrays of every checkpoint both hold (parameters, optimizer moments, random state).

    python3 scripts/same_run.py RUN_A RUN_B

It prints the first metrics record that differs and, per checkpoint, how many entries are equal to the bit, and exits
1 when anything differs. Use it to check that a change to the pipeline leaves a seeded run as it was: train the same
command at both commits (e.g. `fit --preset small --max-steps 300`) and compare the folders.
"""
import argparse
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

# fields that measure the machine, not the run (in metrics.jsonl and in a checkpoint's progress)
TIMINGS = {"tokens_per_s", "s_per_step", "val_seconds", "wall_seconds", "seconds", "speed", "step_time"}


def without_timings(value):
    """A JSON value with every TIMINGS field left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def records(run):
    """metrics.jsonl's records of RUN without their timings: a list of dicts."""
    path = Path(run) / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"same_run.py: {path} does not exist; is {run} a run folder?")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            out.append(without_timings(json.loads(line)))
        except json.JSONDecodeError as e:
            sys.exit(f"same_run.py: {path}, line {n}: not JSON ({e})")
    return out


def compare_checkpoints(path_a, path_b):
    """(equal, differing, largest absolute difference) over the entries of two .npz checkpoints: each array, and the
    structure that holds the rest (step, schedule, progress) compared without its timings; an entry that one file
    lacks differs."""
    with np.load(path_a) as fa, np.load(path_b) as fb:
        equal, differing, largest = 0, len(set(fa.files) ^ set(fb.files)), 0.0
        for name in sorted(set(fa.files) & set(fb.files)):
            x, y = fa[name], fb[name]
            if name == "__structure__":
                same = without_timings(json.loads(x.tobytes())) == without_timings(json.loads(y.tobytes()))
            else:
                same = x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
                    x, y, equal_nan=x.dtype.kind in "fc")
                if not same and x.shape == y.shape and x.dtype.kind == y.dtype.kind == "f":
                    largest = max(largest, float(np.max(np.abs(x.astype(np.float64) - y))))
            equal += same
            differing += not same
        return equal, differing, largest


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    args = p.parse_args(argv)
    a, b = records(args.run_a), records(args.run_b)
    ra, rb = next(((ra, rb) for ra, rb in zip(a, b) if ra != rb), (None, None))
    same = ra is None and len(a) == len(b)
    if ra is not None:
        print(f"metrics.jsonl: first difference at step {ra.get('step')}:\n  {ra}\n  {rb}")
    else:
        print(f"metrics.jsonl: {min(len(a), len(b))} records equal"
              + ("" if len(a) == len(b) else f"; {len(a)} against {len(b)} records"))
    names = {f.name for run in (args.run_a, args.run_b) for f in Path(run).glob("*.npz")}
    for name in sorted(names):
        path, other = Path(args.run_a) / name, Path(args.run_b) / name
        if not (path.is_file() and other.is_file()):
            same = False
            print(f"{name}: only in {path.parent if path.is_file() else other.parent}")
            continue
        try:
            equal, differing, largest = compare_checkpoints(path, other)
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            sys.exit(f"same_run.py: cannot read {name}: {e}")
        same = same and not differing
        print(f"{name}: {equal} entries equal to the bit, {differing} differ"
              + (f" (largest difference {largest:.3g})" if largest else ""))
    print("the same run" if same else "not the same run")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
