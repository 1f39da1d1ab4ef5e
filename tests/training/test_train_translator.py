"""examples/train_translator.py, the training run top to bottom in one file: it runs on the demo corpus, its loss
falls, it evaluates; it reads in nanoGPT's order (data, model, optimizer, loop, evaluation) in about 150 lines; and it
is built from the pieces `python3 -m train fit` uses, not copies of them."""
import inspect
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "train_translator.py"


def test_it_trains_on_the_demo_corpus_and_evaluates():
    done = subprocess.run([sys.executable, str(SCRIPT), "--steps", "60", "--eval-sentences", "20", "--log-every",
                           "30"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    first, last = map(float, re.search(r"trained 60 steps in \d+ s: loss ([\d.]+) at the first step, ([\d.]+) over "
                                       r"the last 10", out).groups())
    assert last < first - 1.5, out   # ln(vocabulary) ~ 6 at the start; the demo's pattern is learnt fast
    nll, bleu = re.search(r"validation: NLL ([\d.]+) \(perplexity [\d.]+\), greedy BLEU ([\d.]+) on 20 sentences",
                          out).groups()
    assert math.isfinite(float(nll)) and float(nll) < first and 0 <= float(bleu) <= 100, out
    assert out.count("reference: ") == 3 and re.search(r"epoch 1 step 60: loss [\d.]+", out), out


def test_it_reads_top_to_bottom_in_nanogpts_order_on_fits_own_pieces():
    text = SCRIPT.read_text()
    sections = re.findall(r"^# ----- (\w[\w ]*?)(?::| -----)", text, re.M)
    assert sections == ["settings", "data", "model", "optimizer", "the training loop", "evaluation"], sections
    assert len(text.splitlines()) <= 160
    # the same functions fit's update and validation are made of (train/loop/assemble.py, train/loop/validation.py)
    from train.loop import assemble, validation
    for name in ("make_optimizer", "TrainStep"):
        assert re.search(rf"^from train\.loop\.step import .*\b{name}\b", text, re.M)
        assert f"{name}(" in inspect.getsource(assemble.make_update)
    for name in ("token_batches", "training_batch", "translate_ids"):
        assert re.search(rf"^from train\.\S+ import .*\b{name}\b", text, re.M) and f"{name}(" in inspect.getsource(
            validation.score)
