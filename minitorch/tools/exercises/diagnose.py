"""What a failed check prints: the case as plain numbers (input, incoming gradient, both gradients and their
difference), how to replay it, and the facts its numbers show without knowing the mistake: a wrong shape, inf or
nan, a constant ratio over the entries whose right gradient is not ~0 (the exercise's own scales named first: the
rows not ignored, sqrt(d)), rows of dx that do not sum to 0. Which part of the derivation is wrong is found by
running the derivation's mutations (explain.py), which replaces these facts when one matches.
"""
import numpy as np

COMMAND = "python3 -m minitorch.tools.exercises"


def plain(a):
    """An array or a number as plain numbers (never np.float64(...)), 5 significant digits."""
    if a is None:
        return "None"
    a = np.asarray(a)
    if a.ndim == 0:
        return f"{a.item():.6g}" if a.dtype.kind in "fc" else str(a.item())
    text = np.array2string(a, precision=5, suppress_small=True, separator=", ", max_line_width=110, threshold=200)
    return text.replace("\n", "\n      ")


def show(arrays, names, g=None, got=None, want=None, i=None, source="numerical (central differences)",
         outputs=("out",)):
    """The case, one array a line: the inputs, then (when given) the incoming gradient of each output (outputs: their
    names, joined on the last axis into g) and input i's gradients."""
    lines = [f"  input {n} {np.shape(a)}: {plain(a)}" for n, a in zip(names, arrays) if a is not None]
    if g is not None:
        name = names[i]
        parts = np.split(np.asarray(g), len(outputs), axis=-1) if len(outputs) > 1 else [g]
        lines += [f"  incoming gradient g_{o} = dL/d{o} {np.shape(part)}: {plain(part)}" if len(outputs) > 1
                  else f"  incoming gradient g = dL/d(out) {np.shape(part)}: {plain(part)}"
                  for o, part in zip(outputs, parts)]
        lines += [f"  dL/d{name}, your backward: {plain(got[i])}",
                  f"  dL/d{name}, {source}: {plain(want[i])}"]
        if np.shape(got[i]) == np.shape(want[i]):
            lines.append(f"  difference (yours - {source.split()[0]}): {plain(got[i] - want[i])}")
    return "\n".join(lines)


def replay(name, number, folder="DIR"):
    """How to see the case again: the check command as run (folder None: the engine's own op, --solution)."""
    where = "--solution" if folder is None else f"--dir {folder}"
    return (f"  replay: it is case {number} of `{COMMAND} check {name} {where}`; the cases are drawn from a fixed "
            f"seed, the same ones in the same order on every run")


def _scales(case):
    """(ratio, what it means) for a constant ratio that no scale of the exercise explains: the fact, no reason."""
    found = [(-1.0, "the sign is flipped")]
    for k in range(2, 65):
        found.append((float(k), f"a factor {k} too large"))
        found.append((1 / k, f"1/{k} of the right value: a factor {k} missing"))
    return found


TINY = 1e-3   # an entry of the right gradient under TINY times the largest entry of either gradient is ~0


def constant_ratio(got, want):
    """got / want when it is one constant over the entries where want is not tiny (at least two of them, and the
    tiny ones agree with it), else None: where the right gradient is ~0 any answer would look like a scale."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    size = max(float(np.abs(got).max(initial=0)), float(np.abs(want).max(initial=0)))
    mask = np.abs(want) > TINY * size
    if mask.sum() < 2:
        return None
    ratio = got[mask] / want[mask]
    r = float(np.median(ratio))
    if not np.all(np.isfinite(ratio)) or abs(r - 1) < 1e-6 or not np.allclose(ratio, r, rtol=1e-4):
        return None
    return r if np.allclose(got[~mask], r * want[~mask], rtol=1e-3, atol=1e-6 * size) else None


def transposed(got, want):
    """Whether shape got is shape want with its last two dims swapped (a matrix's transpose), for shapes that differ:
    the grader's and strict_shapes' one test of that mistake."""
    return len(got) >= 2 and tuple(got) == tuple(want[:-2]) + tuple(want[-2:][::-1])


def diagnose(exercise, case, i, grads, wants):
    """'\n  fact: ...' for what the numbers show without a cause ('\n  diagnosis: ...' where a ratio is one of the
    exercise's own scales), or ''. grads, wants: your gradients and the right ones, one per input (i: the input
    that differs)."""
    got, want = np.asarray(grads[i]), np.asarray(wants[i])
    if got.shape != want.shape:
        if transposed(got.shape, want.shape):
            return (f"\n  fact: your dL/d{exercise.inputs[i]} {got.shape} is shaped like the right one "
                    f"transposed {want.shape}")
        return f"\n  fact: a wrong-shaped gradient: {got.shape} for an input of shape {want.shape}"
    if not np.isfinite(got).all():
        return "\n  fact: your gradient has inf or nan (an overflow, or a division by zero)"
    r = constant_ratio(got, want)
    if r is not None:
        own = exercise.scales(case) if exercise.scales is not None else []
        for value, meaning in own + _scales(case):
            if abs(r - value) <= 1e-4 * abs(value):
                kind = "diagnosis" if (value, meaning) in own else "fact"
                return f"\n  {kind}: a constant ratio {r:.6g} between your gradient and the right one: {meaning}"
        return f"\n  fact: a constant ratio {r:.6g} between your gradient and the right one"
    axes = exercise.zero_sum(case) if exercise.zero_sum is not None and i == 0 else None
    if axes is not None:
        should, sums = want.sum(axis=axes), got.sum(axis=axes)
        if np.allclose(should, 0, atol=1e-6) and not np.allclose(sums, 0, atol=1e-6):
            return (f"\n  fact: each row of dx along dim {axes} should sum to 0 (the output does not change "
                    f"when the row is shifted by a constant), and yours sum to {plain(sums)}")
    return ""
