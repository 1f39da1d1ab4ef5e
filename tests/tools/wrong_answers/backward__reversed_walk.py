"""A wrong answer: the walk goes through the order from its end (the leaves), where the gradients have not
arrived yet."""

MISTAKE = r"walk from the root"


def backward(order):
    for node in reversed(order):
        if node.grad is None or node.backward_fn is None:
            continue
        for parent, g in zip(node.parents, node.backward_fn(node.grad)):
            parent.grad = g if parent.grad is None else parent.grad + g
