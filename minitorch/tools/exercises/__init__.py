"""Graded exercises: first four parts of the engine itself (the topological sort, the backward walk, unbroadcast,
no_grad) on a tiny engine (harness.py), then the forward and backward of one Function at a time, from Mul to the
LSTM cell.

    python3 -m minitorch.tools.exercises list                 the sequence, with what each derives
    python3 -m minitorch.tools.exercises start DIR            copy the stubs (one file per exercise) into DIR
    python3 -m minitorch.tools.exercises check NAME --dir DIR grade DIR/NAME.py ("all" for every exercise)
    python3 -m minitorch.tools.exercises hint NAME [--step N] a hint in steps: derive, a nudge, the answer
    python3 -m minitorch.tools.exercises survey DIR           grade wrong answers that declare their mistake; count
                                                              the named, numbers-only and false diagnoses

A check compares the student's backward with central finite differences of their forward (float64, on shapes and
options drawn from a fixed seed with NumPy alone, drawing.py) and their values and gradients with the engine's own
op; the walk does not sum the student's gradients over broadcast dims (strict shapes). A failure prints the case
(input, incoming gradient, both gradients, their difference), how to replay it, and the mistake named by derivation:
the wrong derivation (a mutation of the exercise's reference answer, derivations/ and mutation.py) whose gradients
are the student's (explain.py); where none is, the smallest failing case found (shrink.py), and what the numbers
show for sure (diagnose.py).
`check(name, function)` grades any Function class (or an engine exercise's function), which is how the tests grade
the engine's solutions and prove that wrong ones fail.

A graded Function follows the engine's contract: forward declares the arrays its backward reads with
`self.save_for_backward(...)` (read back as `self.saved_tensors`; Python values stay plain attributes), and backward
returns one gradient per input of `apply`. It is graded at first order, on NumPy arrays, so it may save arrays it
computed (xhat, the gates); the engine's reference ops save only their inputs and output, so that create_graph=True
can differentiate their backward (minitorch/core/function.py).
"""
from .catalog import BY_NAME, EXERCISES, Exercise
from .checking import EXAMPLES
from .failure import ExerciseFailed
from . import checking


def check(name, function=None, max_examples=EXAMPLES, notes=None, folder="DIR"):
    """Grade `function` (a Function class, or the function of an engine exercise; default: the engine's solution)
    for the exercise `name`; raise ExerciseFailed when it is wrong, else return the number of drawn cases it passed.
    A student's op is graded in strict-shapes mode (the walk does not sum its gradients over broadcast dims); the
    engine's own ops leave that to the walk by design, so they are not. notes: a list that gets advice that is not
    a failure. folder: where the student's file is, for the replay line."""
    if name not in BY_NAME:
        raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(BY_NAME)}")
    exercise = BY_NAME[name]
    if function is None:
        return checking.check(exercise, exercise.solution(), max_examples, strict=False, notes=notes, folder=folder)
    return checking.check(exercise, function, max_examples, notes=notes, folder=folder)


__all__ = ["EXAMPLES", "EXERCISES", "Exercise", "ExerciseFailed", "check"]
