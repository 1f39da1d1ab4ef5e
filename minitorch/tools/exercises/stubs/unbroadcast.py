"""Exercise 3 (unbroadcast): a gradient summed back over the axes broadcasting added or stretched.

When an input of shape `shape` was broadcast to a bigger shape in the forward (b (3, 1) in a (2, 3, 4) + b), the
gradient arriving for it has the broadcast shape. unbroadcast(grad, shape) -> dL/d(input), of exactly `shape`.
Work out what each element of the input contributed to the output, and so what its gradient is.

The check draws pairs of shapes that broadcast and compares your result with the engine's own unbroadcast
(minitorch/core/backward.py). The op exercises after this one need it: the grader does not unbroadcast for them.

Check: python3 -m minitorch.tools.exercises check unbroadcast --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint unbroadcast
"""
import numpy as np  # noqa: F401


def unbroadcast(grad, shape):
    raise NotImplementedError
