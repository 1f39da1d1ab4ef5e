"""The CuPy in use refuses what real CuPy refuses, so that the device="cuda" tests prove something.

In CI `cupy` is the stand-in (tests/cupy_standin): these tests keep it from drifting into permissiveness. With a real
GPU the same tests run against the real CuPy, which checks that the stand-in's rules are CuPy's; the tests of the
stand-in's own sync log and name list are then skipped.
"""
import json
import warnings

import numpy as np
import pytest
from conftest import CUPY_STANDIN, STANDIN_DIR, requires_gpu, requires_standin

pytestmark = [requires_gpu, pytest.mark.gpu]

NAMES = json.loads((STANDIN_DIR / "cupy_names.json").read_text())


@pytest.fixture
def cp():
    import cupy
    return cupy


@pytest.fixture
def a(cp):
    return cp.arange(6, dtype=cp.float32).reshape(2, 3)


# ----- a device array is not a host array -----
def test_numpy_cannot_convert_a_device_array(cp, a):
    assert not isinstance(a, np.ndarray)
    for convert in (np.asarray, np.array, np.float32, lambda x: np.array([x, x])):
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
            convert(a)


@pytest.mark.parametrize("use_host", [
    lambda cp, a, h: cp.exp(h),
    lambda cp, a, h: a + h,
    lambda cp, a, h: h + a,
    lambda cp, a, h: a * h,
    lambda cp, a, h: cp.maximum(a, h),
    lambda cp, a, h: cp.where(a > 0, a, h),
    lambda cp, a, h: cp.concatenate([a, h]),
    lambda cp, a, h: cp.matmul(a, h.T),
    lambda cp, a, h: np.add(h, a),
])
def test_kernels_refuse_host_arrays(cp, a, use_host):
    with pytest.raises((TypeError, ValueError)):
        use_host(cp, a, np.ones((2, 3), dtype=np.float32))


def test_host_data_enters_only_through_explicit_copies(cp, a):
    h = np.arange(6.0).reshape(2, 3)
    assert isinstance(cp.asarray(h), cp.ndarray) and isinstance(cp.array(h), cp.ndarray)
    b = cp.zeros((2, 3))
    b[...] = h                                     # setitem copies host values in, as CuPy does
    b.set(h + 1)
    np.testing.assert_array_equal(b.get(), h + 1)
    assert isinstance(a[np.array([1, 0])], cp.ndarray)    # host index arrays are copied to the device


def test_numpy_functions_on_device_arrays_stay_on_the_device(cp, a):
    for out in (np.exp(a), np.sum(a), np.concatenate([a, a]), np.maximum(a, 1.0)):
        assert isinstance(out, cp.ndarray)


# ----- results are device arrays, 0-d where NumPy gives a scalar -----
@pytest.mark.parametrize("reduce", [
    lambda cp, a: a.sum(), lambda cp, a: a.max(), lambda cp, a: a.mean(), lambda cp, a: cp.sum(a),
    lambda cp, a: a[1, 2], lambda cp, a: a.ravel()[0], lambda cp, a: a.argmax(), lambda cp, a: (a > 2).any(),
    lambda cp, a: cp.linalg.norm(a) if not hasattr(cp, "_standin") else cp.sqrt((a * a).sum()),
])
def test_reductions_and_scalar_indexing_give_0d_device_arrays(cp, a, reduce):
    out = reduce(cp, a)
    assert isinstance(out, cp.ndarray) and out.ndim == 0


def test_the_data_attribute_is_a_memory_pointer_not_a_buffer(cp, a):
    assert not isinstance(a.data, (np.ndarray, cp.ndarray))
    with pytest.raises(TypeError):
        memoryview(a.data)
    with pytest.raises((TypeError, ValueError)):
        np.frombuffer(a.data, dtype=np.float32)


def test_a_0d_device_array_is_no_python_index(cp):
    with pytest.raises(TypeError):
        range(cp.asarray(3))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(cp.ones(2))


# ----- the random generator -----
def test_the_generator_has_cupys_methods_only(cp):
    rng = cp.random.default_rng(0)
    assert rng.standard_normal((2, 3), dtype=cp.float32).dtype == cp.float32
    for draw in (rng.random(2), rng.uniform(size=2), rng.integers(0, 5, size=2), rng.standard_normal(2)):
        assert isinstance(draw, cp.ndarray) and draw.shape == (2,)
    for name in ("normal", "permutation", "shuffle", "choice", "bytes"):
        assert not hasattr(rng, name), name


def test_the_generator_state_is_a_device_array_that_restores_the_stream(cp):
    rng = cp.random.default_rng(7)
    rng.random(5)
    saved = rng.bit_generator._state.get()
    first = rng.random(8).get()
    cp.random.default_rng(99).random(3)              # another generator does not disturb this one
    rng.bit_generator._state[...] = cp.asarray(saved)
    np.testing.assert_array_equal(rng.random(8).get(), first)


# ----- only CuPy 13.6.0's names -----
@requires_standin
def test_only_the_names_of_the_pinned_cupy_exist(cp):
    assert cp.__version__ == NAMES["cupy_version"] == "13.6.0"
    missing_in_cupy = ["bool", "astype", "concat", "pow", "permute_dims", "matrix_transpose", "trapezoid",
                       "cumulative_sum", "unique_counts", "errstate"]
    for name in missing_in_cupy:
        assert hasattr(np, name) and name not in NAMES["cupy"] and not hasattr(cp, name), name
    assert not hasattr(cp.ones(2), "mT") and not hasattr(cp.ones(2), "device_put")
    for name in ("exp", "take_along_axis", "argpartition", "einsum", "asnumpy", "get_array_module", "bool_"):
        assert name in NAMES["cupy"] and hasattr(cp, name), name


@requires_standin
def test_the_name_list_was_made_from_cupy_source():
    assert NAMES["made_by"].endswith("v13.6.0") and len(NAMES["cupy"]) > 400 and "get" in NAMES["cupy.ndarray"]
    assert "normal" not in NAMES["cupy.random.Generator"] and "standard_normal" in NAMES["cupy.random.Generator"]


# ----- every host synchronisation is logged with the line that caused it -----
@requires_standin
@pytest.mark.parametrize("kind, sync", [
    ("item", lambda cp, a: a.sum().item()),
    ("float", lambda cp, a: float(a.sum())),
    ("int", lambda cp, a: int(a.argmax())),
    ("bool", lambda cp, a: bool((a > 1).any())),
    ("get", lambda cp, a: a.get()),
    ("get", lambda cp, a: cp.asnumpy(a)),
    ("tolist", lambda cp, a: a.tolist()),
    ("print", lambda cp, a: repr(a)),
    ("print", lambda cp, a: str(a)),
    ("print", lambda cp, a: f"{a.sum():.2f}"),
    ("boolean-mask indexing", lambda cp, a: a[a > 2]),
    ("boolean-mask indexing", lambda cp, a: a.__setitem__(a > 2, 0.0)),
    ("nonzero", lambda cp, a: a.nonzero()),
    ("nonzero", lambda cp, a: cp.nonzero(a)),
    ("synchronize", lambda cp, a: cp.cuda.Device().synchronize()),
    ("synchronize", lambda cp, a: cp.cuda.get_current_stream().synchronize()),
])
def test_each_host_synchronisation_is_logged_with_its_line(cp, a, syncs, kind, sync):
    sync(cp, a)
    assert len(syncs) == 1 and syncs[0][0] == kind
    assert syncs[0][1].startswith("tests/test_cupy_standin.py:"), syncs


@requires_standin
def test_device_work_is_not_a_synchronisation(cp, a, syncs):
    b = cp.exp(a) @ a.T + a.sum() / a.size
    b[0, 1] = a.max()
    b[cp.arange(2), cp.asarray([0, 1])] -= 1.0
    cp.maximum(b, 0.0, out=b)
    cp.random.default_rng(0).random(3)
    assert syncs == []


@requires_standin
def test_allow_synchronize_false_refuses_a_sync(cp, a):
    import cupyx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # real CuPy deprecates the guard
        with cupyx.allow_synchronize(False):
            a.sum()
            with pytest.raises(cupyx.DeviceSynchronized):
                float(a.sum())


def test_the_stand_in_is_in_use_exactly_when_no_gpu_is():
    import cupy
    assert hasattr(cupy, "_standin") == CUPY_STANDIN


# ----- the launch counter: what CuPy 13.6 launches for each call (read from its source) -----
@pytest.fixture
def launches(cp):
    if not CUPY_STANDIN:
        pytest.skip("counts launches, which only the CuPy stand-in records")
    return cp._standin.count_launches


@pytest.mark.parametrize("call, expected", [
    (lambda cp, a, b: a + b, {"elementwise": 1}),
    (lambda cp, a, b: a.__iadd__(1.0), {"elementwise": 1}),
    (lambda cp, a, b: cp.exp(a, out=b), {"elementwise": 1}),
    (lambda cp, a, b: a.sum(axis=1), {"reduction": 1}),
    (lambda cp, a, b: cp.max(a, axis=0, keepdims=True), {"reduction": 1}),
    (lambda cp, a, b: a.var(axis=1), {"reduction": 2}),                        # mean, then _var_core
    (lambda cp, a, b: a @ b.T, {"matmul": 1}),                                 # b.T is F-contiguous: cuBLAS reads it
    (lambda cp, a, b: a[:, ::2] @ b[:, ::2].T, {"matmul": 1, "copy": 2}),      # neither C- nor F-contiguous
    (lambda cp, a, b: a[None] @ b.T[None], {"matmul": 1, "copy": 1}),          # batched: not C-contiguous is copied
    (lambda cp, a, b: a.T, {}),
    (lambda cp, a, b: a.reshape(6), {}),
    (lambda cp, a, b: a[1:, ::2], {}),
    (lambda cp, a, b: a[0], {}),
    (lambda cp, a, b: a.T.reshape(6), {"copy": 1}),
    (lambda cp, a, b: cp.ascontiguousarray(a), {}),
    (lambda cp, a, b: cp.ascontiguousarray(a.T), {"copy": 1}),
    (lambda cp, a, b: a.astype(cp.float32, copy=False), {}),
    (lambda cp, a, b: a.astype(cp.float32), {"copy": 1}),
    (lambda cp, a, b: a.astype(cp.float64, copy=False), {"copy": 1}),
    (lambda cp, a, b: a.copy(), {"copy": 1}),
    (lambda cp, a, b: cp.concatenate([a, b]), {"copy": 2}),                   # one copy kernel per array up to 8
    (lambda cp, a, b: cp.stack([a] * 9), {"copy": 1}),                        # >8 small arrays: one kernel
    (lambda cp, a, b: cp.zeros((2, 3)), {"memset": 1}),
    (lambda cp, a, b: cp.zeros_like(a), {"memset": 1}),
    (lambda cp, a, b: cp.empty((2, 3)), {}),
    (lambda cp, a, b: cp.ones((2, 3)), {"fill": 1}),
    (lambda cp, a, b: cp.arange(6), {"elementwise": 1}),
    (lambda cp, a, b: a.fill(0), {"memset": 1}),
    (lambda cp, a, b: a.fill(2), {"fill": 1}),
    (lambda cp, a, b: a.__setitem__(slice(None), 0.5), {"fill": 1}),
    (lambda cp, a, b: a.__setitem__(slice(None), b), {"memcpy_d2d": 1}),
    (lambda cp, a, b: a.__setitem__((slice(None), 0), b[:, 1]), {"copy": 1}),
    (lambda cp, a, b: a[cp.arange(2)[::-1]], {"elementwise": 1, "gather": 1}),
    (lambda cp, a, b: a.__setitem__(cp.arange(2)[::-1], b), {"elementwise": 1, "scatter": 1}),
    (lambda cp, a, b: cp.where(a > 1, a, b), {"elementwise": 2}),
    (lambda cp, a, b: cp.tril(a), {"fill": 1, "elementwise": 1}),             # tri mask, then where
    (lambda cp, a, b: a.argsort(axis=1), {"sort": 1}),
    (lambda cp, a, b: a.cumsum(axis=0), {"scan": 1}),
    (lambda cp, a, b: cp.random.default_rng(0).random((3,), dtype=cp.float32), {"random": 1}),
])
def test_each_call_counts_the_launches_cupy_makes(cp, a, launches, call, expected):
    b = a + 1
    with launches() as counted:
        call(cp, a, b)
    assert dict(counted) == {k: v for k, v in expected.items() if v}


def test_host_device_copies_are_counted_apart_from_launches(cp, a, launches):
    import cupyx
    with launches() as counted:
        d = cp.asarray(np.zeros(3, np.int64))
        a.get()
        a[[0, 1]]  # a host index list is copied to the device first
        cupyx.scatter_add(a, d, 1.0)
    assert dict(counted.memcpys) == {"h2d": 2, "d2h": 1}
    assert dict(counted) == {"gather": 1, "scatter": 1}
    assert counted.total == 2


def test_the_counts_add_up_in_the_global_counter(cp, a, launches):
    before = cp._standin.LAUNCHES["reduction"]
    with launches() as outer:
        a.sum()
        with launches() as inner:
            a.max()
    assert (outer["reduction"], inner["reduction"]) == (2, 1)
    assert cp._standin.LAUNCHES["reduction"] == before + 2
