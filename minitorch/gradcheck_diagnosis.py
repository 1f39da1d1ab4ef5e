"""The mistakes any backward can make, named from the right gradients alone (no exercise needed): mutations of the
right gradient of an input (its sign flipped, a constant scale, a transpose, another input's gradient, a gradient
left in its broadcast shape and summed back over the wrong axes) compared with the gradient a backward returned.
mt.gradcheck names the one that matches beside the element that disagrees; the exercises' grader can ask it too.
"""
import itertools

import numpy as np

TINY = 1e-3   # an entry of the right gradient under TINY times the largest entry of either gradient is ~0


def read_only_copy(value):
    """A NumPy array copied and made read-only (other values as they are): what a backward is handed to show, by
    NumPy's refusal, a write that the engine would let corrupt another op's gradient."""
    if not isinstance(value, np.ndarray):
        return value
    value = value.copy()
    value.setflags(write=False)
    return value


def writes_read_only(error):
    """Whether error is NumPy's (or a Tensor's in-place op's) refusal to write into a read-only array."""
    return isinstance(error, (ValueError, RuntimeError)) and "read-only" in str(error)


def _close(a, b, rtol, atol):
    return a is not None and b is not None and np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=rtol, atol=atol)


def ratio(got, want):
    """got / want when it is one constant over the entries where want is not ~0 (two at least; the ~0 ones agree with
    it), else None: where the right gradient is ~0 any answer would look like a scale."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    size = max(float(np.abs(got).max(initial=0)), float(np.abs(want).max(initial=0)))
    mask = np.abs(want) > TINY * size
    if got.shape != want.shape or mask.sum() < 2:
        return None
    r = float(np.median(got[mask] / want[mask]))
    if abs(r - 1) < 1e-6 or not np.allclose(got[mask] / want[mask], r, rtol=1e-4):
        return None
    return r if np.allclose(got[~mask], r * want[~mask], rtol=1e-3, atol=1e-6 * size) else None


def _counts(n, shapes):
    """Where a count n comes from among shapes [(name, shape)]: 'the size of dim 1 of input 0', or ''."""
    for name, shape in shapes:
        for d, size in enumerate(shape):
            if size == n:
                return f" (n = {n}: the size of dim {d} of {name})"
    for name, shape in shapes:
        if int(np.prod(shape)) == n:
            return f" (n = {n}: the number of elements of {name})"
    return ""


def scale_meaning(r, shapes=()):
    """A constant ratio r between a gradient and the right one, in words."""
    if r == -1 or abs(r + 1) < 1e-4:
        return "the sign is flipped"
    for n in range(2, 1025):
        if abs(r - n) <= 1e-4 * n:
            why = " (a term counted twice)" if n == 2 else _counts(n, shapes)
            return f"a constant factor {n} too large{why}: a division by n missing, or a factor applied twice"
        if abs(r - 1 / n) <= 1e-4 / n:
            why = " (as in d x^2 = 2x dx)" if n == 2 else _counts(n, shapes)
            return f"1/{n} of the right value{why}: a factor n missing, or a mean's 1/n where a sum has none"
    return f"a constant factor {r:.6g}: a scale missing or wrong"


def _summed_to(raw, shape):
    """(axes, raw summed over them) for each set of raw's axes whose sum leaves as many elements as shape has."""
    size = int(np.prod(shape))
    for k in range(1, raw.ndim + 1):
        for axes in itertools.combinations(range(raw.ndim), k):
            kept = [n for d, n in enumerate(raw.shape) if d not in axes]
            if int(np.prod(kept)) == size:
                yield axes, raw.sum(axis=axes).reshape(shape)


def name(got, numeric, i, raw=None, shapes=(), rtol=1e-3, atol=1e-5):
    """What input i's gradient `got` is, as a mutation of the right gradients `numeric` (one per input, None for one
    not checked), in words, or '' when none matches. raw: what backward returned for input i before the walk summed
    it to the input's shape (None if not known); shapes: [(name, shape)] where a scale's count may come from."""
    want = numeric[i]

    def matches(candidate):
        return _close(got, candidate, rtol, atol) and not _close(want, candidate, rtol, atol)

    for j, other in enumerate(numeric):
        if j != i and matches(other):
            return (f"your gradient of input {i} is the right gradient of input {j}: the inputs' gradients are swapped "
                    f"(each is built from the others' values: d(ab) = b da + a db)")
    transposed = "the right one transposed: a transpose too many, or a product's factors in the wrong order"
    if raw is not None and raw.ndim >= 2 and want.ndim == raw.ndim and raw.shape != want.shape and (
            raw.swapaxes(-1, -2).shape == want.shape) and _close(raw.swapaxes(-1, -2), want, rtol, atol):
        return (f"your backward returned input {i}'s gradient in shape {raw.shape} for an input {want.shape}: "
                f"{transposed}")
    if got.ndim >= 2 and got.shape[-1] == got.shape[-2] and matches(want.swapaxes(-1, -2)):
        return f"your gradient of input {i} is {transposed}"
    if raw is not None and raw.shape != want.shape:
        for axes, summed in _summed_to(raw, want.shape):
            if _close(summed, want, rtol, atol):
                return (f"your backward returned input {i}'s gradient in shape {raw.shape}, the shape it was "
                        f"broadcast to, for an input {want.shape}: a broadcast not summed back. The engine sums a "
                        f"gradient over the axes broadcasting adds or stretches, lined up from the right, which is not "
                        f"how your forward copied this input; summed over axes {axes} it is right: sum it to the "
                        f"input's shape in backward")
    r = ratio(got, want)
    if r is not None:
        return scale_meaning(r, shapes)
    return ""


__all__ = ["name", "ratio", "scale_meaning"]
