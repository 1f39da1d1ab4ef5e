"""DataLoader, as torch.utils.data's (in one process): batches of a dataset's items, in the order of a sampler (in
order, or shuffled from a generator), stacked by default_collate."""
import numbers

import numpy as np

from ...factories import tensor
from ...functions import stack
from ...tensor import Tensor
from .sampler import BatchSampler, RandomSampler, SequentialSampler


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
    """Iterate over dataset in batches of batch_size items (the last one smaller unless drop_last), in the order of
    sampler (an iterable of indices; default: in order, or with shuffle a new permutation each epoch drawn from
    generator, a minitorch.Generator, else the global CPU generator that mt.manual_seed seeds), or in the batches of
    batch_sampler (an iterable of lists of indices). batch_size=None yields single items (through collate_fn if
    one is given).

    Every item is loaded in the calling process: num_workers (accepted for PyTorch's scripts) starts no worker
    processes, and pin_memory is accepted and does nothing (host arrays are copied to a GPU as they are)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, generator=None):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)   # (checks batch_size and drop_last)
        self.dataset, self.batch_size, self.drop_last, self.generator = dataset, batch_size, drop_last, generator
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory = num_workers, pin_memory
        self.collate_fn = collate_fn or default_collate
        self._convert = collate_fn   # without batches (batch_size=None) a collate_fn of the user's sees each item

    def __iter__(self):
        if self.batch_sampler is None:
            for i in self.sampler:
                yield self.dataset[i] if self._convert is None else self._convert(self.dataset[i])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        return len(self.sampler if self.batch_sampler is None else self.batch_sampler)
