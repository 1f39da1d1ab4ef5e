"""What a failed check prints: the case as plain numbers (input, incoming gradient, both gradients and their
difference), how to replay it, and the likely mistake read from its signature (a constant ratio: a missing scale;
rows of dx that do not sum to 0; ...)."""
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


def show(arrays, names, g=None, got=None, want=None, i=None, source="numerical (central differences)"):
    """The case, one array a line: the inputs, then (when given) the incoming gradient and input i's gradients."""
    lines = [f"  input {n} {np.shape(a)}: {plain(a)}" for n, a in zip(names, arrays) if a is not None]
    if g is not None:
        name = names[i]
        lines += [f"  incoming gradient g = dL/d(out) {np.shape(g)}: {plain(g)}",
                  f"  dL/d{name}, your backward: {plain(got[i])}",
                  f"  dL/d{name}, {source}: {plain(want[i])}"]
        if np.shape(got[i]) == np.shape(want[i]):
            lines.append(f"  difference (yours - {source.split()[0]}): {plain(got[i] - want[i])}")
    return "\n".join(lines)


def replay(name, number):
    return (f"  replay: it is case {number} of `{COMMAND} check {name} --dir DIR`; the cases are drawn from a fixed "
            f"seed, the same ones in the same order on every run")


def _scales(case):
    """(ratio, what it means) for the scales a backward commonly misses, most specific first."""
    found = [(-1.0, "the sign is flipped")]
    p = case.options.get("dropout_p") or 0.0
    if p:
        found += [(1 - p, "it is 1 - dropout_p: the dropout's scale 1/(1 - p) is missing"),
                  (1 / (1 - p), "it is 1/(1 - dropout_p): the dropout's scale is applied once too often")]
    for k in range(2, 65):
        found.append((float(k), f"a factor {k} too large: a missing division by {k}"
                                + (" (a mean's 1/n with n = 2, or a term counted twice)" if k == 2 else
                                   f" (a mean divides by the count of elements averaged, here n = {k})")))
        found.append((1 / k, f"1/{k} of the right value: a missing factor {k}"
                             + (" (d x^2 = 2x dx)" if k == 2 else " (a mean's 1/n applied where it should not be)")))
    for k in range(2, 9):
        if int(np.sqrt(k)) ** 2 != k:
            found.append((np.sqrt(k), f"sqrt({k}) = {np.sqrt(k):.3f} times too large: a missing 1/sqrt(d) with "
                                      f"d = {k} (attention's scale)"))
            found.append((1 / np.sqrt(k), f"1/sqrt({k}) = {1 / np.sqrt(k):.3f} of the right value: the scale "
                                          f"1/sqrt(d) (d = {k}) applied once too often"))
    return found


def constant_ratio(got, want):
    """got / want when it is one constant (over the entries where want is not ~0), else None."""
    got, want = np.asarray(got), np.asarray(want)
    mask = np.abs(want) > 1e-6 * max(1.0, float(np.abs(want).max(initial=0)))
    if mask.sum() < 1 or not np.allclose(got[~mask], 0, atol=1e-6):
        return None
    ratio = got[mask] / want[mask]
    r = float(np.median(ratio))
    if not np.all(np.isfinite(ratio)) or abs(r - 1) < 1e-6 or not np.allclose(ratio, r, rtol=1e-4):
        return None
    return r


def diagnose(exercise, case, i, got, want):
    """'\\n  diagnosis: ...' for the mistakes with a signature, or ''."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"\n  diagnosis: a wrong-shaped gradient: {got.shape} for an input of shape {want.shape}"
    if not np.isfinite(got).all():
        return "\n  diagnosis: your gradient has inf or nan: an overflow, or a division by zero"
    own = exercise.signature(case, i, got, want) if getattr(exercise, "signature", None) else ""
    if own:
        return own
    r = constant_ratio(got, want)
    if r is not None:
        for value, meaning in _scales(case):
            if abs(r - value) <= 1e-4 * abs(value):
                return (f"\n  diagnosis: a constant ratio {r:.6g} between your gradient and the right one: "
                        f"{meaning}")
        return f"\n  diagnosis: a constant ratio {r:.6g} between your gradient and the right one: a missing scale"
    axes = exercise.zero_sum(case) if exercise.zero_sum is not None and i == 0 else None
    if axes is not None:
        should, sums = want.sum(axis=axes), got.sum(axis=axes)
        if np.allclose(should, 0, atol=1e-6) and not np.allclose(sums, 0, atol=1e-6):
            return (f"\n  diagnosis: each row of dx along dim {axes} should sum to 0 (the output does not change "
                    f"when the row is shifted by a constant), and yours sum to {plain(sums)}: a term of the "
                    f"backward (the one with the row sum or row mean) is missing or wrong")
    return ""
