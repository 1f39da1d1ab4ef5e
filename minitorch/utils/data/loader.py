"""DataLoader, as torch.utils.data's (single process): batches of a dataset's items, in order or shuffled from a
generator, stacked by default_collate."""
import numbers

import numpy as np

from ... import backend
from ...factories import tensor
from ...functions import stack
from ...tensor import Tensor


def default_collate(items):
    """A list of items -> a batch: tensors stacked along a new dim 0, numbers into a tensor (ints int64, floats
    float64, as PyTorch), tuples, lists and dicts collated field by field; strings stay a list."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(items)
    if isinstance(first, np.ndarray):
        return tensor(np.stack(items))
    if isinstance(first, bool):
        return tensor(items)
    if isinstance(first, numbers.Integral):
        return tensor(items, dtype=np.int64)
    if isinstance(first, numbers.Real):
        return tensor(items, dtype=np.float64)
    if isinstance(first, str):
        return list(items)
    if isinstance(first, dict):
        return {k: default_collate([item[k] for item in items]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(item) != len(first) for item in items):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        return type(first)(default_collate(list(field)) for field in zip(*items)) if isinstance(first, tuple) \
            else [default_collate(list(field)) for field in zip(*items)]
    raise TypeError(f"default_collate: batch must contain tensors, arrays, numbers, dicts or lists; found "
                    f"{type(first).__name__}")


class DataLoader:
    """Iterate over dataset in batches of batch_size items (the last one smaller unless drop_last), in order or,
    with shuffle, in a new permutation each epoch drawn from generator (a minitorch.Generator; default: the global
    CPU generator that mt.manual_seed seeds). batch_size=None yields single items uncollated."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, generator=None, collate_fn=None,
                 num_workers=0):
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size <= 0):
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if num_workers != 0:   # (one process: the tutorials' loaders read tensors already in memory)
            raise ValueError(f"DataLoader: num_workers must be 0 (minitorch loads in the calling process), got "
                             f"{num_workers!r}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.generator = generator
        self.collate_fn = collate_fn or default_collate

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        rng = self.generator.rng if self.generator is not None else backend.rng("cpu")
        return rng.permutation(n).tolist()

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:
            for i in order:
                yield self.dataset[i]
            return
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            if len(chunk) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn([self.dataset[i] for i in chunk])

    def __len__(self):
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
