"""The cases a check draws, from NumPy alone: the few strategies the catalog uses (`st.integers`, `st.sampled_from`,
`st.booleans`, `st.lists`, `hnp.array_shapes`, `hnp.mutually_broadcastable_shapes`), spelled as hypothesis spells
them, each a function of a NumPy generator. A learner who installed the engine alone (NumPy only) can grade, and case
i of an exercise is drawn from the seed (SEED, i): the same cases in the same order on every run, so a grade never
flakes and `replay` can name a case by its number. Case 1 is the simplest of each draw (the lowest integer, the first
option, the fewest dims, no 1 in place of a side), as hypothesis starts: a wrong backward shows on a small, plain
input first. Case 1's arrays still differ from each other (each array's seed is the next integer), so that a == b
never hides swapped operands.
"""
from types import SimpleNamespace

import numpy as np

# the cases' seed. A diagnosis is made on the first failing case, and some need a plain one (the attention's dropout
# scale: no fully masked query row; no_grad's restored mode: a shallow nesting): under this seed every wrong solution
# of tests/tools/test_exercises.py gets its diagnosis, as under the hypothesis draws that came before
SEED = 16


def _integers(low, high):
    return lambda rng: int(rng.integers(low, high + 1))


def _sampled_from(options):
    options = list(options)
    return lambda rng: options[int(rng.integers(len(options)))]


def _booleans():
    return lambda rng: bool(rng.integers(2))


def _lists(elements, min_size=0, max_size=None, unique_by=None):
    """A list of min_size to max_size elements; with unique_by, no two share a key (it stops short when it cannot
    find another, as hypothesis does)."""
    def draw(rng):
        size = int(rng.integers(min_size, (min_size + 3 if max_size is None else max_size) + 1))
        out, keys = [], set()
        for _ in range(size * 10):
            if len(out) == size:
                break
            x = elements(rng)
            if unique_by is not None:
                if unique_by(x) in keys:
                    continue
                keys.add(unique_by(x))
            out.append(x)
        return out
    return draw


def _array_shapes(min_dims=1, max_dims=None, min_side=1, max_side=None):
    max_dims = min_dims + 2 if max_dims is None else max_dims
    max_side = min_side + 5 if max_side is None else max_side
    return lambda rng: tuple(int(rng.integers(min_side, max_side + 1))
                             for _ in range(int(rng.integers(min_dims, max_dims + 1))))


def _mutually_broadcastable_shapes(num_shapes, base_shape=(), min_dims=0, max_dims=None, min_side=1, max_side=None):
    """Shapes that broadcast together with base_shape: each of min_dims to max_dims dims; a dim under one of
    base_shape's is that side or 1, a dim to the left of them one side shared by all shapes, or 1."""
    base_shape = tuple(base_shape)
    max_dims = max(len(base_shape), min_dims) + 2 if max_dims is None else max_dims
    max_side = max(base_shape + (min_side,)) + 2 if max_side is None else max_side

    def draw(rng):
        extra = [int(rng.integers(min_side, max_side + 1)) for _ in range(max_dims)]   # the sides left of base_shape
        shapes = []
        for _ in range(num_shapes):
            shape = []
            for j in range(int(rng.integers(min_dims, max_dims + 1))):   # j: the dim's place from the right
                side = base_shape[-1 - j] if j < len(base_shape) else extra[j]
                shape.insert(0, 1 if rng.random() < 0.3 else side)
            shapes.append(tuple(shape))
        return SimpleNamespace(input_shapes=shapes, result_shape=np.broadcast_shapes(base_shape, *shapes))
    return draw


st = SimpleNamespace(integers=_integers, sampled_from=_sampled_from, booleans=_booleans, lists=_lists)
hnp = SimpleNamespace(array_shapes=_array_shapes, mutually_broadcastable_shapes=_mutually_broadcastable_shapes)


class _Simplest:
    """Stands in for a generator and always draws the low end: case 1's source. A seed (a range wider than any
    size or option) is the next integer from 1000 instead, so that two arrays of case 1 are not the same array, nor
    the incoming gradient (drawn from seed 1, grader.py)."""

    def __init__(self):
        self.seeds = 0

    def integers(self, low, high=None):
        if high is not None and high - low >= 2**16:
            self.seeds += 1
            return low + 1000 + self.seeds
        return 0 if high is None else low

    def random(self):
        return 1.0


def draw_cases(exercise, n):
    """The first n cases of an exercise: the simplest, then each from its own generator seeded (SEED, i)."""
    for i in range(n):
        rng = _Simplest() if i == 0 else np.random.default_rng([SEED, i])
        yield exercise.draw(lambda strategy, rng=rng: strategy(rng), st, hnp)
