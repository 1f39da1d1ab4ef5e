"""Shared fixtures and hypothesis strategies for the engine tests.

Test modules import the strategies with `from conftest import ...` (pytest puts this folder on sys.path).
"""
import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt

# The machine is shared and noisy: no per-example deadline anywhere. Each test sets its own max_examples.
settings.register_profile("minitorch", deadline=None)
settings.load_profile("minitorch")

NO_GPU_REASON = "needs CuPy and a CUDA GPU (install with `pip install -e '.[gpu]'`); none is usable here"
requires_gpu = pytest.mark.skipif(not mt.cuda_available(), reason=NO_GPU_REASON)


@pytest.fixture(scope="session", params=["cpu", pytest.param("cuda", marks=[requires_gpu, pytest.mark.gpu])])
def device(request):
    """Each device test runs on the CPU and, where CuPy and a GPU are usable, on the GPU."""
    return request.param


# ----- shapes -----
def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    """Array shapes including 0-d and size-1 axes."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcast_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4):
    """Tuples of shapes that broadcast together (differing ndim, size-1 axes, 0-d)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims,
                                             max_side=max_side).map(lambda b: b.input_shapes)


# ----- values -----
def floats(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)


def arrays(shape, low=-3.0, high=3.0):
    """float64 arrays of a shape with values in [low, high]."""
    return hnp.arrays(np.float64, shape, elements=floats(low, high))


def away_from_zero(shape, gap=0.1, high=3.0):
    """float64 arrays whose entries have |x| in [gap, high] (kinks of relu/abs, poles of 1/x stay far away)."""
    return st.tuples(arrays(shape, gap, high), hnp.arrays(np.bool_, shape)).map(lambda t: np.where(t[1], -t[0], t[0]))


def distinct(shape, gap=0.25):
    """float64 arrays whose entries differ pairwise by at least `gap` (no ties for max), in an order hypothesis picks."""
    size = int(np.prod(shape, dtype=np.int64))
    return st.permutations(range(size)).map(
        lambda p: ((np.asarray(p, dtype=np.float64) - size / 2) * gap).reshape(shape))
