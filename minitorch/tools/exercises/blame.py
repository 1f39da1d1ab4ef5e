"""A student's exception is the student's: the frame of their own file in its traceback (the file, the line, its
source and the shapes of the arrays the line names), and the common NumPy errors read for a learner."""
import linecache
import re
import traceback


def files_of(function):
    """The source files of a student's function or Function class: where its own methods are written (the engine's
    base classes excluded)."""
    files = set()
    for owner in function.__mro__ if isinstance(function, type) else (function,):
        if owner is object or getattr(owner, "__module__", "").startswith("minitorch.core"):
            continue
        members = vars(owner).values() if isinstance(owner, type) else (owner,)
        for member in members:
            member = getattr(member, "__func__", member)                    # (a staticmethod's function)
            while hasattr(member, "__wrapped__"):                           # (contextlib.contextmanager)
                member = member.__wrapped__
            code = getattr(member, "__code__", None)
            if code is not None:
                files.add(code.co_filename)
    return files


def student_frame(error, files):
    """(frame, line number) of the last frame of error's traceback in one of `files`, or None."""
    found = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename in files:
            found = frame, line
    return found


def _shapes_named(source, names):
    """'g (2, 3), b (3, 4)': the shapes of the arrays that a source line names, as they were when it raised."""
    shapes = []
    for name in dict.fromkeys(re.findall(r"\b[A-Za-z_]\w*\b", source)):
        value = names.get(name)
        if isinstance(getattr(value, "shape", None), tuple) and not isinstance(value, type):   # (an array, a Tensor)
            shapes.append(f"{name} {tuple(value.shape)}")
    return ", ".join(shapes)


def where(error, files):
    """'\n  at FILE, line N, in FUNCTION: SOURCE' (and the shapes the line names) for the student's frame of error,
    or '' when the error did not pass through their file."""
    found = student_frame(error, files)
    if found is None:
        return ""
    frame, line = found
    source = linecache.getline(frame.f_code.co_filename, line).strip()
    text = f"\n  at {frame.f_code.co_filename}, line {line}, in {frame.f_code.co_name}" + (f": {source}" * bool(source))
    shapes = _shapes_named(source, frame.f_locals) if source else ""
    return text + (f"\n    (there: {shapes})" if shapes else "")


# NumPy's messages for the shape mistakes a learner makes, read for them: (pattern, what it means)
READINGS = [
    (r"mismatch in its core dimension|not aligned",
     "the factors of a matrix product do not fit: the left one's last dim must equal the right one's second-to-last. "
     "A transpose is missing, or there is one too many (transpose the last two dims with x.swapaxes(-1, -2)); write "
     "each factor's shape beside the shape of the result you want"),
    (r"non-broadcastable output operand",
     "an in-place update (+=, -=, out=) into an array smaller than the result: compute a new array, or reduce the "
     "right-hand side to the target's shape first"),
    (r"could not be broadcast",
     "these shapes do not broadcast (NumPy lines shapes up from the right; each dim must be equal or 1): an array "
     "reduced with sum, max or mean lost its axis; keep it with keepdims=True so that it lines up with the array it "
     "was reduced from"),
    (r"0-d array|0-dimensional|iteration over a 0-d",
     "a 0-d array (shape ()) has no axis to index or loop over: write the op with whole-array NumPy calls "
     "(np.exp(a), a.sum(axis=...)), which take every shape, 0-d included"),
    (r"truth value of an array with more than one element is ambiguous",
     "an array where Python wants one True or False (if x:, x or y, x and y, not x): to test for a missing value "
     "write `x is None`; for a condition on the values, a.any() or a.all()"),
    (r"axis -?\d+ is out of bounds for array of dimension",
     "an axis the array does not have: print the shapes; with keepdim=False the reduced axes are gone from g"),
]


def read(error):
    """'\n  diagnosis: ...' for a NumPy error of a known kind, else ''."""
    text = str(error)
    for pattern, meaning in READINGS:
        if re.search(pattern, text):
            return f"\n  diagnosis: {meaning}"
    return ""


__all__ = ["files_of", "student_frame", "where", "read"]
