"""A wrong answer: a depth counter decides what to restore, and from the third level of nesting down it restores
True where the block found recording off."""
import contextlib

from minitorch.tools.exercises.harness import state

MISTAKE = r"restore the mode the block found"
_depth = [0]


@contextlib.contextmanager
def no_grad():
    previous = state.grad_enabled
    _depth[0] += 1
    state.grad_enabled = False
    try:
        yield
    finally:
        _depth[0] -= 1
        state.grad_enabled = previous if _depth[0] < 2 else True
