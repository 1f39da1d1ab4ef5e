"""A wrong answer: the mode is put back after the yield, but not in a finally clause: an exception in the block
leaves recording off."""
import contextlib

from minitorch.tools.exercises.harness import state

MISTAKE = r"finally"


@contextlib.contextmanager
def no_grad():
    was = state.grad_enabled
    state.grad_enabled = False
    yield
    state.grad_enabled = was
