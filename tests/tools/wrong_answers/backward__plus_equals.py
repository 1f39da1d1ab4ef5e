"""A wrong answer: gradients are added with +=, into the array the first gradient was; add's backward hands the
same array to both parents, so the other parent's gradient changes too."""

MISTAKE = r"in-place \+="


def backward(order):
    for node in order:
        if node.grad is not None and node.backward_fn is not None:
            grads = node.backward_fn(node.grad)
            for k, parent in enumerate(node.parents):
                if parent.grad is None:
                    parent.grad = grads[k]
                else:
                    parent.grad += grads[k]
