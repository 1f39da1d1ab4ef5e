"""The smallest failing case near a failing one: the case is drawn again with every choice of its draw recorded
(a size, an option, whether a side is 1; the seeds of its values are kept), and each choice is lowered while the
student's answer still fails, as hypothesis shrinks. Deterministic: the same failure shrinks to the same case."""
from collections import namedtuple

import numpy as np

from .drawing import SEED, _Simplest, hnp, st

ATTEMPTS = 80   # checks of a smaller case, at most: a few milliseconds each
WIDE = 2**16    # a range this wide is a seed: its value is kept

Shrunk = namedtuple("Shrunk", "case failure")


class _Record:
    """A generator that logs each choice it makes."""

    def __init__(self, inner):
        self.inner, self.log = inner, []

    def integers(self, low, high=None):
        value = int(self.inner.integers(low, high))
        self.log.append(("integers", low, high, value))
        return value

    def random(self):
        value = float(self.inner.random())
        self.log.append(("random", None, None, value))
        return value


class _Replay:
    """A generator that makes the recorded choices again (the low end once they run out or no longer fit)."""

    def __init__(self, choices):
        self.choices, self.k = choices, 0

    def _next(self, kind):
        choice = self.choices[self.k] if self.k < len(self.choices) else None
        self.k += 1
        return choice[3] if choice is not None and choice[0] == kind else None

    def integers(self, low, high=None):
        lo, hi = (0, low) if high is None else (low, high)
        value = self._next("integers")
        return lo if value is None else min(max(value, lo), hi - 1)

    def random(self):
        value = self._next("random")
        return 1.0 - 1e-9 if value is None else value


def _draw(exercise, rng):
    return exercise.draw(lambda strategy: strategy(rng), st, hnp)


def _size(case):
    return (sum(int(np.size(a)) for a in case.arrays if a is not None), len(case.text))


def _failure(exercise, function, case, strict):
    from .grader import ExerciseFailed
    try:
        with np.errstate(all="ignore"):
            exercise.check_case(function, case, strict)
    except ExerciseFailed as failure:
        return failure
    except Exception:
        return None
    return None


def _smaller(choices):
    """Each choice lowered: to the low end, then by one (a seed is kept)."""
    for j, (kind, low, high, value) in enumerate(choices):
        if kind == "random":
            options = [0.0, 1.0 - 1e-9]
        elif high is not None and high - low >= WIDE:
            continue
        else:
            lo = 0 if high is None else low
            options = [lo, value - 1] if value > lo else []
        for v in options:
            if v != value:
                yield choices[:j] + [(kind, low, high, v)] + choices[j + 1:]


def shrink(exercise, function, index, strict=True):
    """The smallest case found, from drawn case `index` (0-based), on which `function` still fails: Shrunk(case,
    failure), or None when no smaller case fails."""
    record = _Record(_Simplest() if index == 0 else np.random.default_rng([SEED, index]))
    best = _draw(exercise, record)
    best_choices, best_size, found = record.log, _size(best), None
    attempts, improved = 0, True
    while improved and attempts < ATTEMPTS:
        improved = False
        for choices in _smaller(best_choices):
            if attempts >= ATTEMPTS:
                break
            attempts += 1
            replay = _Replay(choices)
            try:
                case = _draw(exercise, replay)
            except Exception:
                continue
            if _size(case) >= best_size:
                continue
            failure = _failure(exercise, function, case, strict)
            if failure is not None:
                best, best_choices, best_size, found = case, choices[:replay.k], _size(case), Shrunk(case, failure)
                improved = True
                break
    return found
