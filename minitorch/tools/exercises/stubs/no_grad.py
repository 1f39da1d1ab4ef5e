"""Exercise 4 (no_grad): the switch that stops ops from recording the graph.

In the tiny engine an op records its parents and backward_fn only while state.grad_enabled is True. Write
no_grad(), a context manager (`with no_grad(): ...`) inside which ops record nothing. Work out what must hold when
the block ends: normally, when an exception leaves it, and when it ends inside another no_grad block.

The check runs random nestings of blocks, some left by an exception, with your no_grad and with the engine's
(minitorch/core/grad_mode.py), and compares whether each op records its graph.

Check: python3 -m minitorch.tools.exercises check no_grad --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint no_grad
"""
import contextlib  # noqa: F401

from minitorch.tools.exercises.harness import state  # noqa: F401  (state.grad_enabled)


def no_grad():
    raise NotImplementedError
