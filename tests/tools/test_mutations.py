"""Diagnosis by derivation (minitorch/tools/exercises/mutation.py, explain.py): every exercise's reference answer,
written as named parts, yields at least 8 wrong derivations from its own mutation operators; each is written out as
a whole student file, graded through the command's path (load the file, check it), and must fail with a message
that names its mutation in the exercise's words. The right file passes; a failure no mutation explains shows the
smallest failing case instead of a guess."""
import re

import numpy as np
import pytest

from minitorch.tools.exercises import EXERCISES, ExerciseFailed, check, mutation
from minitorch.tools.exercises.__main__ import load
from minitorch.tools.exercises.catalog import BY_NAME

NAMES = [e.name for e in EXERCISES]
ALL = [m for name in NAMES for m in mutation.mutations(name)]


def said(m):
    """A pattern for the mutation's words, its {fields} (the case's facts) matching anything."""
    return ".+?".join(re.escape(part) for part in re.split(r"\{\w+\}", m.says))


def _grade(tmp_path, name, text):
    (tmp_path / f"{name}.py").write_text(text)
    return check(name, load(BY_NAME[name], tmp_path), folder=str(tmp_path))


def test_each_exercise_has_eight_or_more_mutations_and_150_in_all():
    counts = {name: len(mutation.mutations(name)) for name in NAMES}
    assert min(counts.values()) >= 8, counts
    assert len(ALL) >= 150
    assert len({m.id for m in ALL}) == len(ALL)


@pytest.mark.parametrize("name", NAMES)
def test_the_right_derivation_as_a_student_file_passes(name, tmp_path):
    text = mutation.render(name)
    for marker in ("term(", "factor(", "scale(", "pick(", "blocks(", "step(", "instead(", "WORDS", "mutation"):
        assert marker not in text, (marker, text)   # what a student writes: no trace of the markers
    assert _grade(tmp_path, name, text) == 10


@pytest.mark.parametrize("m", ALL, ids=[m.id for m in ALL])
def test_each_mutation_as_a_student_file_fails_and_is_named(m, tmp_path):
    text = mutation.render(m.exercise, m)
    assert text != mutation.render(m.exercise)
    assert "pick(" not in text and "WORDS" not in text
    with pytest.raises(ExerciseFailed) as failure:
        _grade(tmp_path, m.exercise, text)
    message = str(failure.value)
    assert m.id in failure.value.mutations, (m.id, message)
    assert re.search(r"^  diagnosis: .*" + said(m), message, re.M), (m.says, message)
    assert all(other.startswith(f"{m.exercise}:") for other in failure.value.mutations)   # its own exercise's


def test_a_diagnosis_names_only_parts_its_exercise_has():
    """The issue's false diagnoses: Sum's summed dim not put back was told about a product's factors, log_softmax's
    lost keepdims about .T on a batched array; each now gets its own derivation's words."""
    for name, needle, never in [("sum", "put back", ("product", "transpose")),
                                ("log_softmax", "keepdims", (".T", "transpose", "product"))]:
        m = next(m for m in mutation.mutations(name) if needle in m.says)
        with pytest.raises(ExerciseFailed) as failure:
            check(name, mutation.load(name, BY_NAME[name].cls, m))
        told = "\n".join(ln for ln in str(failure.value).splitlines() if "diagnosis:" in ln)
        assert needle in told and not any(word in told for word in never), told


def test_a_mean_over_the_first_reduced_dim_is_told_the_right_n():
    m = next(m for m in mutation.mutations("mean") if m.operator == "first_dim")
    with pytest.raises(ExerciseFailed) as failure:
        check("mean", mutation.load("mean", "Mean", m))
    text = str(failure.value)
    shape, dim = re.search(r"on a \(([\d, ]+)\), dim=(None|-?\d+|\([-\d, ]+\))", text).groups()
    shape = [int(s) for s in shape.split(",")]
    dims = range(len(shape)) if dim == "None" else [int(d) for d in dim.strip("()").split(",") if d.strip()]
    n = int(np.prod([shape[d] for d in dims]))
    assert n > shape[list(dims)[0]], text   # a case where the first dim is not n
    assert f"(n = {n})" in text, text


def test_a_wrong_answer_no_mutation_explains_shows_the_smallest_failing_case():
    """A Sum that is wrong only on 3-D inputs fails first on a (3, 4, 4) case; no mutation gives its numbers, so the
    grader says so and shows a smaller failing case, shrunk from the drawn one, with its numbers."""
    from minitorch.autograd import Function
    from minitorch.ops import normalize_dims

    class Sum(Function):
        def forward(self, a, dim=None, keepdim=False):
            self.shape, self.dims, self.keepdim = a.shape, normalize_dims(dim, a.ndim), keepdim
            return a.sum(axis=self.dims, keepdims=keepdim)

        def backward(self, g):
            if not self.keepdim:
                g = np.expand_dims(g, self.dims)
            return np.broadcast_to(g, self.shape) * (1.5 if len(self.shape) == 3 and g.size > 1 else 1.0)

    with pytest.raises(ExerciseFailed) as failure:
        check("sum", Sum)
    text = str(failure.value)
    assert failure.value.mutations == []
    drawn = re.search(r"on a \(([\d, ]+)\)", text).group(1)
    smallest = re.search(r"the smallest case found that fails \(a \(([\d, ]+)\)", text)
    assert smallest, text
    size = [int(s) for s in smallest.group(1).split(",")]
    assert np.prod(size) < np.prod([int(s) for s in drawn.split(",")]) and len(size) == 3, text
    assert "your backward:" in text.split("the smallest case found")[1]   # its numbers


def test_a_no_grad_failure_no_mutation_explains_shrinks_to_a_short_nesting():
    """The issue's no_grad case: a mistake shown by 4 levels and 15 ops where a few would do. This no_grad restores
    True only from the third level of nesting down; the shrunk case nests three blocks and holds a few ops."""
    import contextlib
    from minitorch.tools.exercises.harness import state

    depth = [0]

    @contextlib.contextmanager
    def no_grad():
        previous = state.grad_enabled
        depth[0] += 1
        state.grad_enabled = False
        try:
            yield
        finally:
            depth[0] -= 1
            state.grad_enabled = previous if depth[0] < 2 else True

    with pytest.raises(ExerciseFailed) as failure:
        check("no_grad", no_grad)
    text = str(failure.value)
    drawn = re.search(r"on the blocks (\[.*\])\n", text).group(1)
    smallest = re.search(r"the smallest case found that fails \(the blocks (\[.*\])\):", text)
    assert smallest, text
    assert smallest.group(1).count("op") < drawn.count("op") and smallest.group(1).count("no_grad") >= 3, text
