"""The wrong answers of the project's own making (tests/tools/wrong_answers, written by hand, none of them a
rendered mutation): every one fails, and `survey` counts what the grader told of each (named, numbers only,
false) against the mistake each file declares."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch.tools.exercises import EXERCISES, mutation
from minitorch.tools.exercises.survey import VERDICTS, declared, verdict

HERE = Path(__file__).resolve().parent / "wrong_answers"
ROOT = HERE.parents[2]


def test_forty_or_more_over_every_exercise_each_declaring_its_mistake():
    files = sorted(HERE.glob("*__*.py"))
    assert len(files) >= 40
    names = {declared(f)[0] for f in files}
    assert names == {e.name for e in EXERCISES}
    for f in files:
        re.compile(declared(f)[1])


def test_none_is_a_rendered_mutation():
    rendered = {ast.dump(ast.parse(mutation.render(m.exercise, m))) for e in EXERCISES
                for m in mutation.mutations(e.name)}
    for f in HERE.glob("*__*.py"):
        assert ast.dump(ast.parse(f.read_text())) not in rendered, f.name


def test_every_wrong_answer_fails_and_the_survey_counts_them():
    done = subprocess.run([sys.executable, "-m", "minitorch.tools.exercises", "survey", str(HERE)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = re.findall(r"^(named|numbers only|false|passed) +(\S+\.py)$", done.stdout, re.M)
    assert sorted(name for _, name in rows) == sorted(f.name for f in HERE.glob("*__*.py"))
    assert [name for v, name in rows if v == "passed"] == [] and {v for v, _ in rows} <= set(VERDICTS)
    counts = re.search(r"^(\d+) wrong answers: (\d+) named, (\d+) numbers only, (\d+) false diagnoses, 0 passed$",
                       done.stdout, re.M)
    assert counts and int(counts.group(1)) == len(rows) == sum(map(int, counts.groups()[1:])), done.stdout
    for verdict_, count in zip(("named", "numbers only", "false"), counts.groups()[1:]):
        assert sum(v == verdict_ for v, _ in rows) == int(count)


def test_a_verdict_reads_the_diagnosis_not_the_numbers():
    assert verdict("X: backward disagrees on a (3,)\n  diagnosis: the row sum is missing\n  input a: [1]",
                   r"row sum") == "named"
    assert verdict("X: backward disagrees on a (3,)\n  diagnosis: the sign is flipped", r"row sum") == "false"
    assert verdict("X: backward disagrees on a (3,)\n  fact: a constant ratio 3\n  input a: [1, 2]",
                   r"row sum") == "numbers only"
    assert verdict("X: backward disagrees on a (3,)\n  input a: [1]\n    diagnosis: the row sum (of a smaller case)",
                   r"sign") == "numbers only"


# the issue's examples: numbers only for the LSTM cell, conv2d, exp and log; a false diagnosis for Mean's n, the
# masked attention row, col2im's crop, log_softmax's keepdims, and a right dv told about dw. Each is named now.
ISSUE = ["lstm_cell__gates_out_of_order", "lstm_cell__no_tanh_prime", "lstm_cell__sigmoid_prime_on_gates",
         "lstm_cell__h_only", "lstm_cell__dc_prev_without_f", "conv2d__no_stride_in_col2im", "conv2d__flipped_kernel",
         "conv2d__bias_first_sample", "conv2d__crop_from_start", "exp__times_input", "exp__exp_of_out",
         "log__one_over_a", "log__a_squared", "mean__first_dim", "attention__masked_row_nan",
         "attention__dv_before_dropout", "log_softmax__keepdims_lost", "sum__new_axis_at_end"]


@pytest.mark.parametrize("name", ISSUE)
def test_the_issues_wrong_answers_are_named_and_told_nothing_false(name):
    from minitorch.tools.exercises.survey import grade
    v, said = grade(HERE / f"{name}.py")
    assert v == "named", said
    assert "subtract the max" not in said and "+=" not in said and ".T" not in said, said
    if name.startswith("attention__dv"):
        assert "dw" not in said.split("diagnosis:")[1], said


# the issue's wrong answers that passed every case: a write into g or into an input, and formulas that overflow
# where the stub promises stability (b**2 at b = 1e200; no max shift at logits near 1000). Each fails, named.
USED_TO_PASS = ["div__divides_g_in_place", "mul__multiplies_g_in_place", "exp__exp_in_place", "div__b_squared",
                "log_softmax__no_shift", "attention__no_shift", "softmax__no_shift"]


@pytest.mark.parametrize("name", USED_TO_PASS)
def test_the_wrong_answers_that_used_to_pass_fail_named(name):
    from minitorch.tools.exercises.survey import grade
    v, said = grade(HERE / f"{name}.py")
    assert v == "named", said


def test_the_lstm_cells_incoming_gradients_are_shown_apart(tmp_path):
    """A failing LSTM cell's report gives g_h and g_c, each (N, H), not one joined (N, 2H) array."""
    from minitorch.tools.exercises import ExerciseFailed, check
    from minitorch.tools.exercises.loading import load
    exercise = next(e for e in EXERCISES if e.name == "lstm_cell")
    (tmp_path / "lstm_cell.py").write_text((HERE / "lstm_cell__dc_prev_without_f.py").read_text())
    with pytest.raises(ExerciseFailed) as failed:
        check("lstm_cell", load(exercise, tmp_path))
    shapes = re.findall(r"incoming gradient g_(h|c) = dL/d\1 \((\d+), (\d+)\)", str(failed.value))
    gates = re.search(r"input gates \((\d+), (\d+)\)", str(failed.value))
    assert [s[0] for s in shapes] == ["h", "c"], str(failed.value)
    assert all(int(n) == int(gates.group(2)) // 4 for _, _, n in shapes), str(failed.value)
    assert "dL/d(out)" not in str(failed.value)
