"""A wrong answer: a class with __enter__ and __exit__ whose exit switches recording back on, whatever the mode was
when the block began."""
from minitorch.tools.exercises.harness import state

MISTAKE = r"restore the mode the block found"


class no_grad:
    def __enter__(self):
        state.grad_enabled = False

    def __exit__(self, *exc):
        state.grad_enabled = True
        return False
