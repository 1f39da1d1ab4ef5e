"""Checking one exercise from end to end: the drawn cases, each graded (grader.py) and a failure explained by the
mutation of the derivation it matches (explain.py), then the cases the stub promises, then the notes that are no
failure."""
from .diagnose import COMMAND, replay
from .drawing import draw_cases
from .explain import explain
from .failure import UNFINISHED, ExerciseFailed
from .grader import check_promise, unused_saved
from .promises import promised_cases

EXAMPLES = 10  # drawn cases per check: a wrong backward fails on the first few; the whole sequence runs in seconds


def check(exercise, function, max_examples=EXAMPLES, strict=True, notes=None, folder="DIR"):
    """Grade `function` (a Function class, or a function for an engine exercise) for `exercise`; raise
    ExerciseFailed on the first wrong case, else return the number of cases checked. strict: the walk does not sum
    the student's gradients over broadcast dims (strict_shapes.py); the engine's own ops leave that to
    the walk by design, so they are graded with strict=False. notes: a list that gets advice that is no failure
    (an array saved for backward that backward never reads). folder: the student's, for the replay line."""
    cases = []
    for case in draw_cases(exercise, max_examples):
        cases.append(case)
        try:
            exercise.check_case(function, case, strict)
        except ExerciseFailed as failure:
            if failure.sandbox == "write" or any(unfinished in str(failure) for unfinished in UNFINISHED):
                raise ExerciseFailed(f"{failure}\n{replay(exercise.name, len(cases), folder)}") from None
            explained = explain(exercise, function, case, len(cases) - 1, str(failure), strict,
                                show_smallest=failure.sandbox is None)
            failed = ExerciseFailed(f"{explained}\n{replay(exercise.name, len(cases), folder)}")
            failed.mutations = explained.mutations
            raise failed from None
    if hasattr(exercise, "apply"):
        # a promise's failure is not explained: its hint (what the stub promised) is the diagnosis; an answer that
        # passed every drawn case gives there what the mutations that change nothing on that case give (a broadcast
        # sum where nothing is broadcast, the dropout's scale where dropout is off), so a mutation's name would be false
        for case, hint in promised_cases(exercise, cases[0]):
            try:
                check_promise(exercise, function, case, hint, strict)
            except ExerciseFailed as failure:
                where = "--solution" if folder is None else f"--dir {folder}"
                raise ExerciseFailed(f"{failure}\n  replay: a case the stub promises, checked after the drawn cases "
                                     f"on every run of `{COMMAND} check {exercise.name} {where}`") from None
    if notes is not None and hasattr(exercise, "apply"):
        notes.extend(unused_saved(exercise, function, cases[0]))
    return len(cases)
