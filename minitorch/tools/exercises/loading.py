"""Loading a student's answer: the Function class (or function) in their folder's NAME.py, or a failure naming the
file and line that stop it."""
import importlib.util
from pathlib import Path

from .blame import where
from .diagnose import COMMAND
from .failure import ExerciseFailed


def load(exercise, folder):
    """The Function class the student wrote in folder/NAME.py; ExerciseFailed with what is missing."""
    path = Path(folder) / f"{exercise.name}.py"
    if not path.exists():
        raise ExerciseFailed(f"{path} does not exist: copy the stubs there first with `{COMMAND} start {folder}`")
    spec = importlib.util.spec_from_file_location(f"minitorch_exercise_{exercise.name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        line = getattr(e, "lineno", None)   # a SyntaxError's; any other error's line is in its traceback
        source = f": {e.text.strip()}" if isinstance(e, SyntaxError) and e.text else ""
        raise ExerciseFailed(f"{path}{f', line {line}' if line else ''} does not import: {type(e).__name__}: {e}"
                             f"{source}{where(e, {str(path)})}") from None
    if not hasattr(module, exercise.cls):
        raise ExerciseFailed(f"{path} has no class {exercise.cls}: keep the stub's class name")
    return getattr(module, exercise.cls)
