"""A wrong answer: each parent's gradient is set, not added: a Value used twice keeps only its last gradient."""

MISTAKE = r"kept only its last gradient"


def backward(order):
    for node in order:
        if node.backward_fn is not None and node.grad is not None:
            for parent, g in zip(node.parents, node.backward_fn(node.grad)):
                parent.grad = g
