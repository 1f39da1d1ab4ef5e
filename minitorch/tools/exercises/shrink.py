"""The smallest failing case near a failing one, by one greedy search: take the first smaller case that still fails,
until none does. The smaller cases are the exercise's own where its case is a structure with nothing drawn to lower
(`smaller`: no_grad's blocks, each with a step or a block left out, which gives a shorter nesting than lowering the
draw's choices); else the case is drawn again with every choice of its draw recorded (a size, an option, whether a
side is 1; the seeds of its values are kept), and each choice is lowered, as hypothesis shrinks. Deterministic: the
same failure shrinks to the same case."""
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
    """Its arrays' size, then its text's length (a structure's: a step fewer, a block that no longer raises)."""
    return (sum(int(np.size(a)) for a in case.arrays if a is not None), len(case.text))


def _failure(exercise, function, case, strict):
    from .failure import ExerciseFailed
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


def _greedy(start, smaller, fails):
    """From start = (size, item): the first of smaller(item)'s (size, item) that is smaller and for which fails(item)
    gives a failure, again from there, until none does or ATTEMPTS checks are spent; (item, failure) or None."""
    (best_size, best), found, attempts, improved = start, None, 0, True
    while improved and attempts < ATTEMPTS:
        improved = False
        for size, item in smaller(best):
            if size >= best_size:
                continue
            if attempts >= ATTEMPTS:
                break
            attempts += 1
            failure = fails(item)
            if failure is not None:
                best_size, best, found, improved = size, item, (item, failure), True
                break
    return found


def _redrawn(exercise, choices):
    """(size, (choices, case)) for each lowering of the draw's choices that still draws a case."""
    for lowered in _smaller(choices):
        replay = _Replay(lowered)
        try:
            case = _draw(exercise, replay)
        except Exception:
            continue
        yield _size(case), (lowered[:replay.k], case)


def shrink(exercise, function, index, strict=True):
    """The smallest case found, from drawn case `index` (0-based), on which `function` still fails: Shrunk(case,
    failure), or None when no smaller case fails."""
    record = _Record(_Simplest() if index == 0 else np.random.default_rng([SEED, index]))
    drawn = _draw(exercise, record)
    own = getattr(exercise, "smaller", None)
    if own is not None:
        found = _greedy((_size(drawn), drawn), lambda case: ((_size(c), c) for c in own(case)),
                        lambda case: _failure(exercise, function, case, strict))
        return None if found is None else Shrunk(*found)
    found = _greedy((_size(drawn), (record.log, drawn)), lambda item: _redrawn(exercise, item[0]),
                    lambda item: _failure(exercise, function, item[1], strict))
    return None if found is None else Shrunk(found[0][1], found[1])
