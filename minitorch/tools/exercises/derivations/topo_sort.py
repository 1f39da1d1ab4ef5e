"""topo_sort: a depth-first visit that appends each Value after everything it was computed from, each Value once,
then reversed: the root first, every Value before its parents."""
from minitorch.tools.exercises.mutation import instead, pick, step

WORDS = {
    "skip visited": "the check that skips a Value already visited (a Value used twice is reached twice): keep a set "
                    "of the nodes visited and skip them",
    "mark visited": "marking a Value as visited (visited.add), so the check never skips: keep a set of the nodes "
                    "visited and skip them",
    ("append", "before parents"): "each Value is appended before its parents are visited: append a node after "
                                  "visiting all its parents (depth first), then reverse",
    ("append", "leaves only"): "only the leaves (Values with no parents) are listed: every Value reachable from the "
                               "root belongs in the order",
    ("append", "no leaves"): "the leaves (Values with no parents) are left out: every node reachable from the root "
                             "through .parents, the leaves included, once",
    ("parents", "first_only"): "only the first parent of each Value is visited: a Value has one entry in .parents "
                               "per operand, and each must be visited",
    ("parents", "none"): "the parents are never visited: the order must reach every Value the root was computed "
                         "from",
    ("reverse", "not_reversed"): "the order is not reversed: the depth-first visit lists the leaves first; the root "
                                 "comes first (append each node after its parents, then reverse the list)",
    ("reverse", "root_dropped"): "the root is left out of the order: it comes first",
}


def topological_order(root):
    order, visited = [], set()

    def visit(node):
        if step("skip visited"):
            if id(node) in visited:
                return
        if step("mark visited"):
            visited.add(id(node))
        if step("append"):
            pass
        elif instead("append", "before parents"):
            order.append(node)
        for parent in pick("parents", node.parents, first_only=node.parents[:1], none=()):
            visit(parent)
        if step("append"):
            order.append(node)
        elif instead("append", "leaves only"):
            if not node.parents:
                order.append(node)
        elif instead("append", "no leaves"):
            if node.parents:
                order.append(node)

    visit(root)
    return pick("reverse", order[::-1], not_reversed=order, root_dropped=order[::-1][1:])
