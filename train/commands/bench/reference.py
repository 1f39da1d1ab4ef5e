"""PyTorch eager beside the bench: scripts/torch_reference.py, the same model, batch and step, run in a process of its
own (train never imports torch), its JSON result read back; None where PyTorch is not installed."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from ...cli.errors import TrainError

REFERENCE = Path(__file__).resolve().parents[3] / "scripts" / "torch_reference.py"
NO_TORCH = "PyTorch is not installed here: no figures beside these (pip install -e '.[reference]')"


def run_reference(preset_name, device, *options):
    """scripts/torch_reference.py --preset P --device D OPTIONS --json -> its result (a dict), or None without torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    done = subprocess.run([sys.executable, str(REFERENCE), "--preset", preset_name, "--device", device,
                           *map(str, options), "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise TrainError(f"scripts/torch_reference.py failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def print_beside(ours, theirs):
    """The train bench's step time, speed and memory beside PyTorch eager's for the same preset and batch."""
    if theirs is None:
        print(NO_TORCH)
        return
    peak = "GPU peak (pool / allocator)" if ours["device"] == "cuda" else "peak RSS of the process"
    ours_peak = ours["device_pool_peak_bytes"] if ours["device"] == "cuda" else ours["peak_rss_bytes"]
    rows = [("step time, median, ms", ours["step_s_median"] * 1e3, theirs["step_s_median"] * 1e3),
            ("target tokens/s", ours["tokens_per_s"], theirs["tokens_per_s"]),
            (peak + ", MB", ours_peak / 2**20, theirs["peak_memory_bytes"] / 2**20),
            ("graph after forward+loss, MB", (ours.get("traced_graph_bytes") or 0) / 2**20 or None,
             theirs["graph_saved_bytes"] / 2**20)]
    print(f"beside PyTorch {theirs['torch']} eager (scripts/torch_reference.py, the same preset, batch and steps):")
    print(f"  {'':<30} {'minitorch':>10} {'PyTorch':>10} {'ratio':>7}")
    for label, mine, other in rows:
        if mine is None:   # the traced graph is measured on the CPU only
            continue
        print(f"  {label:<30} {mine:>10,.0f} {other:>10,.0f} {mine / other:>7.2f}")
