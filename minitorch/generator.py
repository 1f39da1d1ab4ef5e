"""Generator, as torch.Generator: a random stream of its own, seeded by manual_seed, for the draws that take a
`generator=` (DataLoader's shuffling, randperm, random_split), apart from the global one that mt.manual_seed seeds."""
import numpy as np


class Generator:
    """A seeded NumPy generator on the host (device "cpu"); manual_seed(seed) restarts it and returns it."""

    def __init__(self, device="cpu"):
        if device != "cpu":
            raise ValueError(f"Generator: only device='cpu' is supported (the host's NumPy stream), got {device!r}")
        self.device = device
        self._seed = None
        self.rng = np.random.default_rng()

    def manual_seed(self, seed):
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self.rng.bit_generator.state

    def set_state(self, state):
        self.rng.bit_generator.state = state
        return self
