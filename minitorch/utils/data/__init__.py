"""minitorch.utils.data, as torch.utils.data: Dataset, TensorDataset, Subset, random_split, the samplers
(SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler) and DataLoader (batch_size, shuffle, sampler,
batch_sampler, drop_last, a seeded generator, collate_fn; loading in the calling process)."""
from .dataset import Dataset, Subset, TensorDataset, random_split
from .loader import DataLoader, default_collate
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DataLoader", "default_collate", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler"]
