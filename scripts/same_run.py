"""Whether two run folders trained the same run, bit for bit: their metrics.jsonl records (timings left out) and the
arrays of every checkpoint both hold (parameters, optimizer moments, random state).

    python3 scripts/same_run.py RUN_A RUN_B

It prints the first metrics record that differs and, per checkpoint, how many arrays are equal to the bit, and exits
1 when anything differs. Use it to check that a change to the pipeline leaves a seeded run as it was: train the same
command at both commits (e.g. `fit --preset small --max-steps 300`) and compare the folders.
"""
import argparse
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

# fields that measure the machine, not the run
TIMINGS = {"tokens_per_s", "s_per_step", "val_seconds", "wall_seconds", "seconds"}


def records(run):
    """metrics.jsonl's records of RUN without their timings: a list of dicts."""
    path = Path(run) / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"same_run.py: {path} does not exist; is {run} a run folder?")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            out.append({k: v for k, v in json.loads(line).items() if k not in TIMINGS})
        except json.JSONDecodeError as e:
            sys.exit(f"same_run.py: {path}, line {n}: not JSON ({e})")
    return out


def first_difference(a, b):
    """The first pair of records that differ, or (None, None) when the common records agree."""
    for ra, rb in zip(a, b):
        if ra != rb:
            return ra, rb
    return None, None


def compare_arrays(path_a, path_b):
    """(equal, differing, largest absolute difference) over the arrays the two .npz files both hold."""
    with np.load(path_a) as fa, np.load(path_b) as fb:
        names = sorted(set(fa.files) & set(fb.files) - {"__structure__"})  # the structure records timings too
        equal, differing, largest = 0, 0, 0.0
        for name in names:
            x, y = fa[name], fb[name]
            if x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
                equal += 1
                continue
            differing += 1
            if x.shape == y.shape and x.dtype.kind == y.dtype.kind == "f":
                largest = max(largest, float(np.max(np.abs(x.astype(np.float64) - y))))
        return equal, differing + len(set(fa.files) ^ set(fb.files)), largest


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    args = p.parse_args(argv)
    a, b = records(args.run_a), records(args.run_b)
    ra, rb = first_difference(a, b)
    same = ra is None and len(a) == len(b)
    if ra is not None:
        print(f"metrics.jsonl: first difference at step {ra.get('step')}:\n  {ra}\n  {rb}")
    else:
        print(f"metrics.jsonl: {min(len(a), len(b))} records equal"
              + ("" if len(a) == len(b) else f"; {len(a)} against {len(b)} records"))
    for path in sorted(Path(args.run_a).glob("*.npz")):
        other = Path(args.run_b) / path.name
        if not other.is_file():
            continue
        try:
            equal, differing, largest = compare_arrays(path, other)
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            sys.exit(f"same_run.py: cannot read {path.name}: {e}")
        same = same and not differing
        print(f"{path.name}: {equal} arrays equal to the bit, {differing} differ"
              + (f" (largest difference {largest:.3g})" if differing else ""))
    print("the same run" if same else "not the same run")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
