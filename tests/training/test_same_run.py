"""scripts/same_run.py tells two run folders apart by one bit of one array, one logged loss or the saved progress,
and not by timings."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "same_run.py"


def write_run(folder, loss, weight, seconds, step=20):
    folder.mkdir()
    records = [{"kind": "train", "step": 10, "loss": 8.5, "s_per_step": seconds},
               {"kind": "epoch", "step": 20, "val_loss": loss, "wall_seconds": 10 * seconds}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    np.savez(folder / "last.npz", a0=weight, a1=np.arange(3), __structure__=np.frombuffer(
        json.dumps({"progress": {"step": step, "window": {"speed": 1 / seconds}}}).encode(), np.uint8))


def same_run(a, b):
    done = subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_runs_that_differ_only_in_their_timings_are_the_same_run(tmp_path):
    w = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    write_run(tmp_path / "a", 4.25, w, 0.8)
    write_run(tmp_path / "b", 4.25, w.copy(), 1.1)
    rc, out = same_run(tmp_path / "a", tmp_path / "b")
    assert rc == 0, out
    assert "2 records equal" in out and "last.npz: 3 entries equal to the bit, 0 differ" in out


def test_one_bit_of_a_weight_a_logged_loss_or_the_saved_step_makes_another_run(tmp_path):
    w = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    nudged = w.copy()
    nudged[2, 3] = np.nextafter(nudged[2, 3], np.float32(np.inf))
    write_run(tmp_path / "a", 4.25, w, 0.8)
    write_run(tmp_path / "b", 4.25, nudged, 0.8)
    write_run(tmp_path / "c", np.nextafter(4.25, 5.0), w, 0.8)
    write_run(tmp_path / "d", 4.25, w, 0.8, step=21)
    rc, out = same_run(tmp_path / "a", tmp_path / "b")
    assert rc == 1 and "1 differ" in out and "not the same run" in out, out
    rc, out = same_run(tmp_path / "a", tmp_path / "c")
    assert rc == 1 and "first difference at step 20" in out, out
    rc, out = same_run(tmp_path / "a", tmp_path / "d")
    assert rc == 1 and "last.npz: 2 entries equal to the bit, 1 differ" in out, out


def test_a_folder_that_is_no_run_is_named(tmp_path):
    rc, out = same_run(tmp_path / "missing", tmp_path)
    assert rc == 1 and "missing/metrics.jsonl does not exist" in out
