"""backward: walk the order root first; each Value with a .grad hands backward_fn(.grad) on to its parents, one
gradient each, adding it to what a parent already has (a new array, never +=)."""
from minitorch.tools.exercises.mutation import instead, pick, step, term

WORDS = {
    ("order", "leaves_first"): "walk from the root: reverse topological order (the order topological_order returns, "
                               "root first), so that a node's gradient is complete before it is sent to its parents",
    ("local", "unchanged"): "each parent gets the Value's own gradient, not backward_fn(.grad): the local "
                            "derivatives of the op are never applied",
    ("parents", "reversed"): "each gradient goes to the wrong parent: backward_fn returns one gradient per parent, "
                             "in the order of .parents",
    ("parents", "first_only"): "only the first parent gets its gradient: every parent in .parents does",
    ("add", "assign"): "a node used twice kept only its last gradient: add the gradients that reach a node from each "
                       "use (grad = g if grad is None else grad + g), do not assign",
    ("add", "in place"): "an in-place += into a gradient array that another node shares (add's backward hands the "
                         "same g to both parents): write parent.grad = parent.grad + g, a new array",
    "later": "the gradient added to what a Value already has (grad + g)",
}


def backward(order):
    for node in pick("order", order, leaves_first=order[::-1]):
        if node.grad is None or node.backward_fn is None:
            continue
        grads = pick("local", node.backward_fn(node.grad), unchanged=[node.grad] * len(node.parents))
        for parent, g in pick("parents", list(zip(node.parents, grads)), reversed=list(zip(node.parents,
                                                                                            grads[::-1])),
                              first_only=list(zip(node.parents, grads))[:1]):
            if parent.grad is None:
                parent.grad = g
            elif step("add"):
                parent.grad = parent.grad + term("later", g)
            elif instead("add", "assign"):
                parent.grad = g
            elif instead("add", "in place"):
                parent.grad += g

