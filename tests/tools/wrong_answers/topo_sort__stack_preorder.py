"""A wrong answer: an iterative depth-first walk with a stack that lists each Value when it is popped (preorder),
so a Value can come before a Value that uses it."""

MISTAKE = r"appended before its parents are visited|after visiting all its parents|before n\d+, which uses it"


def topological_order(root):
    order, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(node.parents)
    return order
