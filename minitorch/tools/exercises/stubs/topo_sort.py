"""Exercise 1 (topo_sort): the order in which backward visits the graph.

The tiny engine (minitorch/tools/exercises/harness.py) builds a graph of Values: each has .parents, the Values it
was computed from (one entry per operand: x * x lists x twice). Write topological_order(root) -> a list of every
Value reachable from root through .parents, each exactly once, root first, and each Value before every Value it was
computed from (so that when backward reaches a Value, all the gradients it will receive have arrived).

The check builds random graphs (shared nodes, x * x, long chains) and compares your order with the engine's own
walk (minitorch/core/backward.py) on the same graph.

Check: python3 -m minitorch.tools.exercises check topo_sort --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint topo_sort
"""


def topological_order(root):
    raise NotImplementedError
