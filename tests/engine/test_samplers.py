"""utils.data's samplers (SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler), random_split and
DataLoader's sampler=, batch_sampler=, num_workers= and pin_memory=, against torch.utils.data: the same orders and
batches where no random draw is involved, the same structure (lengths, counts, disjointness) where one is, the same
errors for conflicting arguments."""
import re
import warnings
from collections import Counter

import pytest

import minitorch as mt
from minitorch.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler, SubsetRandomSampler,
                                  TensorDataset, random_split)


def torch_data():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")
    return torch, pytest.importorskip("torch.utils.data")


def seeded(seed):
    return mt.Generator().manual_seed(seed)


def test_sequential_and_batch_samplers_as_torch():
    torch, tdata = torch_data()
    for n, size, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False), (0, 2, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), size, drop)
        theirs = tdata.BatchSampler(tdata.SequentialSampler(range(n)), size, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    # any iterable of indices is a sampler
    assert list(BatchSampler([5, 1, 4, 2, 3], 2, False)) == list(tdata.BatchSampler([5, 1, 4, 2, 3], 2, False))


@pytest.mark.parametrize("replacement, num_samples", [(False, None), (False, 25), (False, 4), (True, None),
                                                      (True, 40)])
def test_random_sampler_draws_what_torch_draws_in_structure(replacement, num_samples):
    torch, tdata = torch_data()
    n = 10
    ours = list(RandomSampler(range(n), replacement, num_samples, generator=seeded(0)))
    theirs = list(tdata.RandomSampler(range(n), replacement, num_samples,
                                      generator=torch.Generator().manual_seed(0)))
    assert len(ours) == len(theirs) == len(RandomSampler(range(n), replacement, num_samples))
    assert all(isinstance(i, int) and 0 <= i < n for i in ours)
    if not replacement:   # whole permutations, the last cut short: each index k or k + 1 times, as torch's
        full, rest = divmod(len(ours), n)
        for k in range(full):
            assert sorted(ours[k * n:(k + 1) * n]) == list(range(n))
        assert len(set(ours[full * n:])) == rest
        assert sorted(Counter(ours).values()) == sorted(Counter(theirs).values())


def test_random_samplers_follow_their_generator():
    first = list(RandomSampler(range(20), generator=seeded(3)))
    assert first == list(RandomSampler(range(20), generator=seeded(3)))
    assert first != list(RandomSampler(range(20), generator=seeded(4))) and sorted(first) == list(range(20))
    sampler = RandomSampler(range(20), generator=seeded(3))
    assert list(sampler) != list(sampler)   # a new order each epoch
    mt.manual_seed(5)
    a = list(RandomSampler(range(20)))
    mt.manual_seed(5)
    assert a == list(RandomSampler(range(20)))   # without a generator: the global one
    indices = [7, 3, 11, 2]
    subset = list(SubsetRandomSampler(indices, generator=seeded(1)))
    assert sorted(subset) == sorted(indices) and subset == list(SubsetRandomSampler(indices, generator=seeded(1)))
    assert len(SubsetRandomSampler(indices)) == 4


def test_sampler_errors_as_torch():
    torch, tdata = torch_data()
    cases = [lambda d: d.RandomSampler(range(3), replacement=1), lambda d: d.RandomSampler(range(3), num_samples=0),
             lambda d: d.RandomSampler(range(3), num_samples=2.0), lambda d: d.RandomSampler(range(0)),
             lambda d: d.BatchSampler(range(3), 0, False), lambda d: d.BatchSampler(range(3), True, False),
             lambda d: d.BatchSampler(range(3), 2, 1)]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(tdata)
        with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value).split(",")[0])):
            case(mt.utils.data)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [0.34, 0.33, 0.33], [1.0], [10, 0]])
def test_random_split_lengths_as_torch(lengths):
    torch, tdata = torch_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = random_split(range(10), lengths, generator=seeded(0))
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        theirs = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert len(caught) == len(their_warnings)
    items = [s[i] for s in ours for i in range(len(s))]
    assert sorted(items) == list(range(10))   # disjoint, and all of them
    again = random_split(range(10), lengths, generator=seeded(0))
    assert [list(s.indices) for s in again] == [list(s.indices) for s in ours]


def test_random_split_errors_as_torch():
    torch, tdata = torch_data()
    for lengths in ([3, 3], [0.5, 0.6], [1.5, -0.5]):
        with pytest.raises(ValueError):
            tdata.random_split(range(10), lengths)
        with pytest.raises(ValueError):
            random_split(range(10), lengths)


def test_data_loader_with_a_sampler_or_a_batch_sampler_as_torch():
    torch, tdata = torch_data()
    values = list(range(10, 20))
    ours_ds, theirs_ds = TensorDataset(mt.tensor(values)), tdata.TensorDataset(torch.tensor(values))
    cases = [dict(sampler=[3, 1, 4, 1, 5], batch_size=2), dict(sampler=[3, 1, 4], batch_size=2, drop_last=True),
             dict(sampler=[2, 0], batch_size=None), dict(batch_sampler=[[0, 1, 2], [9], [4, 4]]),
             dict(batch_size=4, num_workers=2, pin_memory=True), dict(batch_size=3, num_workers=1)]
    for kw in cases:
        ours = [b[0].tolist() for b in DataLoader(ours_ds, **kw)]
        theirs = [b[0].tolist() for b in tdata.DataLoader(theirs_ds, **kw)]
        assert ours == theirs, kw
        assert len(DataLoader(ours_ds, **kw)) == len(tdata.DataLoader(theirs_ds, **kw))
    loader = DataLoader(ours_ds, batch_size=3, sampler=SubsetRandomSampler([1, 2, 5, 7], generator=seeded(0)))
    got = [i for (b,) in loader for i in b.tolist()]
    assert sorted(got) == [11, 12, 15, 17] and len(loader) == 2
    batches = BatchSampler(RandomSampler(range(10), generator=seeded(2)), 4, drop_last=True)
    assert [b[0].shape for b in DataLoader(ours_ds, batch_sampler=batches)] == [(4,), (4,)]
    assert DataLoader(ours_ds, num_workers=2).num_workers == 2 and DataLoader(ours_ds, pin_memory=True).pin_memory
    # without batches, a collate_fn of the user's still sees each item, as torch's
    twice = list(DataLoader(ours_ds, batch_size=None, sampler=[1, 3], collate_fn=lambda item: item[0] * 2))
    theirs = list(tdata.DataLoader(theirs_ds, batch_size=None, sampler=[1, 3], collate_fn=lambda item: item[0] * 2))
    assert [t.item() for t in twice] == [t.item() for t in theirs] == [22, 26]


@pytest.mark.parametrize("kw", [dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
                                dict(batch_sampler=[[0]], shuffle=True), dict(batch_sampler=[[0]], sampler=[0]),
                                dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
                                dict(num_workers=-1), dict(batch_size=0), dict(batch_size=2, drop_last=None)])
def test_data_loader_refuses_conflicting_arguments_as_torch(kw):
    torch, tdata = torch_data()
    with pytest.raises(ValueError) as theirs:
        tdata.DataLoader(tdata.TensorDataset(torch.arange(4)), **kw)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value).split(";")[0].split(",")[0])):
        DataLoader(TensorDataset(mt.arange(4)), **kw)
