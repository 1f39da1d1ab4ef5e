"""A wrong answer: depth first and reversed, but without remembering the Values visited: a Value used twice is
listed twice."""

MISTAKE = r"keep a set of the nodes visited"


def topological_order(root):
    order = []

    def visit(node):
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(root)
    return list(reversed(order))
