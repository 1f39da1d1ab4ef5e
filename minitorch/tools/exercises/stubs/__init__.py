"""The exercises' stubs: one file per exercise: a function of the tiny engine (the first four) or a
Function (the rest), raising NotImplementedError.

`python3 -m minitorch.tools.exercises start DIR` copies them to DIR, where the student fills them in, and
`python3 -m minitorch.tools.exercises check NAME --dir DIR` grades DIR/NAME.py. Each file's docstring says what to
derive.
"""
