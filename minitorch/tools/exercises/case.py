"""One drawn input of a check."""
from dataclasses import dataclass

ROW = 3   # the fewest elements of a row in any case: on rows of 2 many wrong answers look like a scale (xhat = +-1)


@dataclass
class Case:
    """One drawn input: float64 arrays (one per differentiable input; None for an absent one), the other arguments of
    `apply` (dims, masks, targets, ...; a program for the engine exercises), and a description for a failure
    message."""
    arrays: list
    options: dict
    text: str
