"""Exercise 2 (backward): the backward walk, with gradients added up.

backward(order) gets a topological order of the tiny engine's Values (root first, as the topo_sort exercise makes
it), whose root already has .grad = dL/d(root). Fill in .grad of every Value in it: a Value with a .grad and a
backward_fn hands backward_fn(value.grad) on to its .parents, one gradient per parent, in order. A Value may be used
more than once (x * x, or two Values computed from it): work out what its gradient is then.

The check runs your walk on random graphs and compares every leaf's .grad with the engine's backward on the same
graph.

Check: python3 -m minitorch.tools.exercises check backward --dir THIS_FOLDER
Hint: python3 -m minitorch.tools.exercises hint backward
"""


def backward(order):
    raise NotImplementedError
