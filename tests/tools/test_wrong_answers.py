"""The wrong answers of the project's own making (tests/tools/wrong_answers, written by hand, none of them a
rendered mutation): every one fails, and `survey` counts what the grader told of each (named, numbers only,
false) against the mistake each file declares."""
import ast
import re
import subprocess
import sys
from pathlib import Path

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
