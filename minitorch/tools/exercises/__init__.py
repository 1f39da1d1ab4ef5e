"""Graded exercises: write the forward and backward of one Function at a time, from Mul to the LSTM cell.

    python3 -m minitorch.tools.exercises list                 the sequence, with what each derives
    python3 -m minitorch.tools.exercises start DIR            copy the stubs (one file per exercise) into DIR
    python3 -m minitorch.tools.exercises check NAME --dir DIR grade DIR/NAME.py ("all" for every exercise)
    python3 -m minitorch.tools.exercises hint NAME            a hint, and where docs/backprop.md derives it

A check compares the student's backward with central finite differences of their forward (float64, on shapes and
options drawn by hypothesis) and their values and gradients with the engine's own op. `check(name, function)` grades
any Function class, which is how the tests grade the engine's solutions and prove that wrong backward passes fail.

A graded Function follows the engine's contract: forward declares the arrays its backward reads with
`self.save_for_backward(...)` (read back as `self.saved_tensors`; Python values stay plain attributes), and backward
returns one gradient per input of `apply`. It is graded at first order, on NumPy arrays, so it may save arrays it
computed (xhat, the gates); the engine's reference ops save only their inputs and output, so that create_graph=True
can differentiate their backward (minitorch/core/function.py).
"""
from .catalog import BY_NAME, EXERCISES, Exercise
from .grader import EXAMPLES, ExerciseFailed
from . import grader


def check(name, function=None, max_examples=EXAMPLES):
    """Grade `function` (a Function class; default: the engine's solution) for the exercise `name`; raise
    ExerciseFailed when it is wrong, else return the number of drawn cases it passed."""
    if name not in BY_NAME:
        raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(BY_NAME)}")
    exercise = BY_NAME[name]
    return grader.check(exercise, exercise.solution() if function is None else function, max_examples)


__all__ = ["EXAMPLES", "EXERCISES", "Exercise", "ExerciseFailed", "check"]
