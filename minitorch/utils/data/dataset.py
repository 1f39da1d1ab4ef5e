"""Datasets as torch.utils.data's: anything with __getitem__ and __len__; TensorDataset over tensors of one first
dimension; Subset and random_split."""
import math
import warnings

from ... import backend


class Dataset:
    """A map-style dataset: subclasses give __getitem__(index) and __len__()."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")


class TensorDataset(Dataset):
    """Item i is (t[i] for t in tensors): tensors of one length along their first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        n = tensors[0].shape[0]
        for k, t in enumerate(tensors):
            if t.shape[0] != n:
                raise ValueError(f"TensorDataset: tensor {k} has {t.shape[0]} rows, tensor 0 has {n} (size "
                                 f"mismatch between tensors)")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of dataset at indices, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Subsets of the given lengths over a random permutation of dataset's indices (drawn from generator, a
    minitorch.Generator, else the global CPU generator). Lengths that sum to 1 are fractions, as PyTorch's: each
    floor(n * fraction), the remainder given one each round robin from the first."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1, got {frac}")
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths sum to {sum(lengths)}, the dataset has {n} items (sum of input "
                         f"lengths does not equal the length of the input dataset)")
    order = (generator.rng if generator is not None else backend.rng("cpu")).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out
