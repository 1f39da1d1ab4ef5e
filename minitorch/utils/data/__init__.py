"""minitorch.utils.data, as torch.utils.data: Dataset, TensorDataset, DataLoader (batch_size, shuffle, drop_last, a
seeded generator, collate_fn), random_split, Subset."""
from .dataset import Dataset, Subset, TensorDataset, random_split
from .loader import DataLoader, default_collate

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DataLoader", "default_collate"]
