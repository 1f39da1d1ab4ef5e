"""What a check reports when a student's answer is unfinished or wrong."""


# failures that are no derivation's: nothing to match or shrink
UNFINISHED = ("is not written yet", "forward keeps an array as self.", "does not import")


class ExerciseFailed(AssertionError):
    """A graded Function is not finished or is wrong; the message says where and on which input. mutations: the ids
    of the wrong derivations its diagnosis names (mutation.py). sandbox: what the sandbox caught, if anything:
    "write" (a write into g, what forward saved or an input: the message is the diagnosis, which no mutation's name
    replaces) or "dtype" (another dtype out: a matching mutation is named beside it, and no smaller case is shown)."""
    mutations = ()
    sandbox = None
