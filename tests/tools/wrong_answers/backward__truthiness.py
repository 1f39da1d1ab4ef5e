"""A wrong answer: `parent.grad or 0` to start the sum, which asks an array for its truth value."""

MISTAKE = r"is None"


def backward(order):
    for node in order:
        if node.grad is None or node.backward_fn is None:
            continue
        for parent, g in zip(node.parents, node.backward_fn(node.grad)):
            parent.grad = (parent.grad or 0) + g
