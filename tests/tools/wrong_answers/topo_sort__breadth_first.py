"""A wrong answer: the order of a breadth-first walk from the root, which lists a Value as soon as one user reaches
it, before the other Values that use it."""
from collections import deque

MISTAKE = r"depth first|after visiting all its parents|before n\d+, which uses it"


def topological_order(root):
    order, seen, queue = [], {id(root)}, deque([root])
    while queue:
        node = queue.popleft()
        order.append(node)
        for parent in node.parents:
            if id(parent) not in seen:
                seen.add(id(parent))
                queue.append(parent)
    return order
