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


# ----- only CuPy 14.2.0's names -----
@requires_standin
def test_only_the_names_of_the_pinned_cupy_exist(cp):
    assert cp.__version__ == NAMES["cupy_version"] == "14.2.0"
    missing_in_cupy = ["errstate", "vecdot", "matvec", "unstack"]
    for name in missing_in_cupy:
        assert name not in NAMES["cupy"] and not hasattr(cp, name), name
    assert hasattr(cp.ones((2, 2)), "mT") and not hasattr(cp.ones(2), "device_put")
    for name in ("exp", "take_along_axis", "argpartition", "einsum", "asnumpy", "get_array_module", "bool_",
                 "bool", "concat", "pow", "permute_dims", "cumulative_sum", "unique_counts", "astype"):
        assert name in NAMES["cupy"] and hasattr(cp, name), name


@requires_standin
def test_the_name_list_was_made_from_cupy_source():
    assert NAMES["made_by"].endswith("v14.2.0") and len(NAMES["cupy"]) > 400 and "get" in NAMES["cupy.ndarray"]
    assert "annotations" not in NAMES["cupy"]   # `from __future__ import annotations` is no name
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
    assert syncs[0][1].startswith("tests/engine/test_cupy_standin.py:"), syncs


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


# ----- the launch counter: what CuPy 14.2 launches for each call (read from its source) -----
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
    (lambda cp, a, b: a.argsort(axis=1), {"copy": 1, "sort": 3}),             # copy, index and key transforms, sort
    (lambda cp, a, b: cp.argsort(a[0]), {"copy": 1, "sort": 2}),
    (lambda cp, a, b: a.cumsum(axis=1), {"copy": 1, "scan": 1}),              # astype(order='C'), batch scan
    (lambda cp, a, b: a.cumsum(axis=0), {"copy": 2, "scan": 1}),              # + the rolled rows' reshape copy
    (lambda cp, a, b: cp.cumsum(a, axis=0, out=b), {"copy": 3, "scan": 1}),   # + the copy back into out
    (lambda cp, a, b: a.sum(), {"reduction": 1}),                             # < 128 elements: the plain kernel
    (lambda cp, a, b: cp.random.default_rng(0).integers(0, 9, size=3, dtype=cp.uint16),
     {"random": 1, "elementwise": 1}),                                        # uint32 draw, then add(low, y, dtype)
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


@pytest.mark.parametrize("shape, axis, expected", [
    ((4096,), None, 1),            # cub::DeviceReduce, one tile (256 x 16 float32)
    ((4097,), None, 2),            # two passes
    ((64, 100), None, 2),
    ((64, 100), 1, 1),             # DeviceSegmentedReduce over the contiguous last axis
    ((3000, 4), 0, 1),             # axis 0 of a C array: CuPy's own reduction kernel, one launch
])
def test_a_sum_launches_cubs_kernels(cp, launches, shape, axis, expected):
    x = cp.ones(shape, dtype=cp.float32)
    with launches() as counted:
        x.sum(axis=axis)
    assert dict(counted) == {"reduction": expected}


def test_full_reductions_outside_cubs_routines_take_the_two_pass_block_kernel(cp, launches):
    x = cp.ones((64, 100), dtype=cp.float32)
    with launches() as counted:
        x.mean(), (x > 0).all(), x.astype(cp.int32).sum()   # int32 sums promote: not CUB's routine
    assert counted["reduction"] == 6
    with launches() as counted:
        x[:, ::2].mean()                                    # not contiguous: one plain kernel
    assert counted["reduction"] == 1


def test_argmax_of_a_whole_array_reads_cubs_key_value_pair(cp, launches):
    with launches() as counted:
        cp.arange(5000, dtype=cp.float32).argmax()
    assert dict(counted) == {"elementwise": 1, "reduction": 2, "copy": 1}


def test_cumsum_along_axis_0_of_long_rows_scans_the_block_sums_too(cp, launches):
    rows = cp.ones((1500, 3), dtype=cp.float32)
    prefix = cp.empty((1501, 3), dtype=cp.float64)
    with launches() as counted:
        cp.cumsum(rows, axis=0, dtype=cp.float64, out=prefix[1:])
    assert dict(counted) == {"copy": 3, "scan": 3}   # 1500 > 512: scan, scan of the 2 block sums, add
    np.testing.assert_array_equal(prefix[1:].get()[:, 0], np.arange(1, 1501))


def test_uniform_computes_its_bounds_on_the_device(cp, launches):
    with launches() as counted:
        cp.random.default_rng(0).uniform(-1, 1, (2, 3))
    assert dict(counted) == {"random": 1, "elementwise": 3} and dict(counted.memcpys) == {"h2d": 2}


def test_sort_does_not_wait_for_the_device(cp, a, syncs):
    """CuPy 13 ran thrust with cuda::par, which synchronises the stream (cupy/cupy#9126); 14 uses par_nosync
    (cupy/cupy#9497)."""
    cp.argsort(a, axis=1), cp.sort(a[0])
    assert syncs == []


# ----- cupy.fuse: CuPy 14.2's first fusion implementation's rules, one launch a call -----
@pytest.fixture
def xy(cp):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    return x, y, cp.asarray(x), cp.asarray(y)


def test_a_fused_body_computes_what_numpy_computes(cp, xy):
    x, y, dx, dy = xy
    f = cp.fuse(lambda x, y: cp.sum(cp.exp(x - 1.0) * y + abs(x) ** 2, axis=1) * 0.5 - 2)
    expected = np.sum(np.exp(x - np.float32(1)) * y + np.abs(x) ** 2, axis=1) * np.float32(0.5) - 2
    got = f(dx, dy)
    assert got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-6)


def test_a_fused_call_is_one_launch_whatever_its_body_does(cp, xy, launches):
    dx, dy = xy[2:]
    f = cp.fuse(lambda x, y: cp.sum(cp.where(x > y, cp.exp(x) * 2 + y, cp.tanh(y)) - x * y, axis=-1) + 1)
    with launches() as counted:
        f(dx, dy)
    assert dict(counted) == {"fused": 1}


def test_a_fused_body_updates_its_array_arguments_in_place(cp, xy):
    x, y, dx, dy = xy

    def step(p, g, m, lr):
        m *= 0.9
        m += 0.1 * g
        p -= lr * m
        g[...] = 0
    m = cp.zeros_like(dx)
    assert cp.fuse(step)(dx, dy, m, np.float32(0.5)) is None
    np.testing.assert_allclose(m.get(), np.float32(0.1) * y, rtol=1e-6)
    np.testing.assert_allclose(dx.get(), x - np.float32(0.5) * (np.float32(0.1) * y), rtol=1e-6)
    assert not dy.get().any()


def test_without_device_arrays_a_fused_function_is_a_plain_call(cp, xy):
    x, y = xy[:2]
    got = cp.fuse(lambda x, y: np.maximum(x, y).sum(axis=0))(x, y)   # NumPy's methods and all: not traced
    assert isinstance(got, np.ndarray) and np.array_equal(got, np.maximum(x, y).sum(axis=0))


@pytest.mark.parametrize("arg", [np.zeros((3, 4), np.float32), [1.0, 2.0], "text"])
def test_fused_arguments_are_device_arrays_and_scalars_only(cp, xy, arg):
    with pytest.raises(TypeError):
        cp.fuse(lambda x, a: x + a)(xy[2], arg)


def test_a_device_array_from_outside_the_arguments_is_refused(cp, xy):
    dx, dy = xy[2:]
    with pytest.raises(TypeError, match="Concrete ndarray"):
        cp.fuse(lambda x: x + dy)(dx)


@pytest.mark.parametrize("body, error", [
    (lambda cp, x: cp.sum(x, axis=1, keepdims=True), NotImplementedError),
    (lambda cp, x: cp.max(x, axis=0, keepdims=True), NotImplementedError),
    (lambda cp, x: float(x) + 1, TypeError),
    (lambda cp, x: x if x > 0 else -x, TypeError),                 # Python control flow on device values
    (lambda cp, x: cp.where(x, x, 0.0), TypeError),                # where's condition must be bool
    (lambda cp, x: 2.0, TypeError),                                # a fused function returns arrays or None
    (lambda cp, x: x.astype(cp.float64, order="C"), TypeError),
    (lambda cp, x: x.__setitem__(0, 1.0), ValueError),             # only x[...] = v and x[:] = v
    (lambda cp, x: cp.add(x, 1, casting="unsafe"), TypeError),     # ufunc keywords: out only
])
def test_what_cupy_fuse_refuses(cp, xy, body, error):
    with pytest.raises(error):
        cp.fuse(lambda x: body(cp, x))(xy[2])


@requires_standin
@pytest.mark.parametrize("body, error, message", [
    (lambda cp, x, s: cp.sum(x, axis=1) + cp.max(x, axis=1), NotImplementedError, "Multiple reduction"),
    (lambda cp, x, s: cp.sum(x, axis=1).reshape(3), AttributeError, "no attribute 'reshape'"),
    (lambda cp, x, s: cp.sum(x) + x, NotImplementedError, "before the fused reduction"),
    (lambda cp, x, s: cp.sum(x, axis=0) * s, NotImplementedError, "before the fused reduction"),   # s is pre-map
    (lambda cp, x, s: x[0] + 1, NotImplementedError, "indexing"),
    (lambda cp, x, s: x.sum(axis=1), AttributeError, "use xp.sum"),
    (lambda cp, x, s: cp.mean(x, axis=1), NotImplementedError, "cupy.mean cannot be used"),
    (lambda cp, x, s: cp.add.reduce(x, axis=1), NotImplementedError, "add.reduce"),
    (lambda cp, x, s: cp.sum(x, axis=1, dtype=cp.float64), NotImplementedError, "drops dtype"),
    (lambda cp, x, s: x.shape, NotImplementedError, "shape"),
])
def test_the_stand_in_refuses_what_needs_cupys_grid_synchronised_fusion(cp, xy, body, error, message):
    """CuPy 13.6 hands these to its second, grid-synchronised fusion (or fails); the stand-in refuses them."""
    with pytest.raises(error, match=message):
        cp.fuse(lambda x, s: body(cp, x, s))(xy[2], 2.0)


@requires_standin
def test_a_fused_reduction_must_reduce_the_kernels_whole_shape(cp, xy):
    dx = xy[2]
    row = dx[0]
    with pytest.raises(NotImplementedError, match="broadcast shape of all the array arguments"):
        cp.fuse(lambda x, r: cp.sum(r * 2, axis=0))(dx, row)   # CuPy would sum r over the 3 rows of x as well
    got = cp.fuse(lambda x, r: cp.sum(x * r, axis=0))(dx, row)
    np.testing.assert_allclose(got.get(), (xy[0] * xy[0][0]).sum(axis=0), rtol=1e-6)


def test_fused_dtypes_follow_cupys_scalar_rule(cp, xy):
    """In CuPy 14.2's fusion every scalar is weak (fusion.pyx `is_weak = type(a)`): a Python scalar, constant or
    argument, keeps the arrays' type; a NumPy float64 is strong under NumPy 2 and promotes; and without the kind check
    of the ufuncs outside fuse, uint8 + 0.5 takes the float16 loop."""
    dx = xy[2]
    assert cp.fuse(lambda x: x * 0.5)(dx).dtype == np.float32                        # constant
    assert cp.fuse(lambda x, s: x * s)(dx, np.float32(0.5)).dtype == np.float32
    assert cp.fuse(lambda x, s: x * s)(dx, 0.5).dtype == np.float32
    assert cp.fuse(lambda x, s: x * s)(dx, np.float64(0.5)).dtype == np.float64
    assert cp.fuse(lambda x: x.astype(cp.float16) + 1)(dx).dtype == np.float16
    assert cp.fuse(lambda x: x + 0.5)(cp.ones(2, dtype=cp.uint8)).dtype == np.float16


def test_fused_outputs_take_the_broadcast_shape_of_all_arguments(cp, xy):
    dx = xy[2]
    got = cp.fuse(lambda x, r: r + 1)(dx, dx[0])   # the kernel's shape is that of every array argument together
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got.get(), np.broadcast_to(xy[0][0] + 1, (3, 4)))


def test_a_fused_function_inside_another_is_part_of_its_kernel(cp, xy, launches):
    inner = cp.fuse(lambda x: x * 2)
    outer = cp.fuse(lambda x, y: inner(x) + y)
    with launches() as counted:
        got = outer(*xy[2:])
    assert dict(counted) == {"fused": 1}
    np.testing.assert_allclose(got.get(), xy[0] * 2 + xy[1], rtol=1e-6)


def test_asarray_of_host_data_is_a_copy_on_the_device(cp):
    host = np.arange(3.0)
    device = cp.asarray(host)
    device += 1
    assert host.tolist() == [0.0, 1.0, 2.0] and device.get().tolist() == [1.0, 2.0, 3.0]


# ----- blind spots closed (issue 20) -----
@requires_standin
def test_scatter_add_adds_in_no_fixed_order(cp):
    """On a GPU scatter_add adds with atomics in no fixed order: float sums differ in their last bits between runs."""
    import cupyx
    rng = np.random.default_rng(0)
    index, values = rng.integers(0, 3, 2000), rng.standard_normal((2000, 4)).astype(np.float32)
    reference = np.zeros((3, 4))
    np.add.at(reference, index, values.astype(np.float64))
    runs = set()
    for _ in range(10):
        out = cp.zeros((3, 4), dtype=cp.float32)
        cupyx.scatter_add(out, cp.asarray(index), cp.asarray(values))
        np.testing.assert_allclose(out.get(), reference, rtol=1e-4, atol=1e-4)
        runs.add(out.get().tobytes())
    assert len(runs) > 1


@pytest.mark.parametrize("index_of", [
    lambda rng: rng.integers(0, 5, (40, 3)),                              # an embedding's (batch, time) ids
    lambda rng: rng.integers(-5, 5, 60),                                  # negative indices count from the end
    lambda rng: (rng.integers(0, 5, 30), rng.integers(0, 6, 30)),         # (row, column) pairs
])
def test_backend_scatter_add_on_cuda_is_the_same_bits_every_run(cp, index_of):
    from minitorch import backend
    rng = np.random.default_rng(1)
    index = index_of(rng)
    parts = index if isinstance(index, tuple) else (index,)
    shape = (5, 6) if len(parts) == 2 else (5, 3)
    values = rng.standard_normal(parts[0].shape + shape[len(parts):]).astype(np.float32)
    reference = np.zeros(shape)
    np.add.at(reference, index, values.astype(np.float64))
    device_index = tuple(cp.asarray(p) for p in parts) if isinstance(index, tuple) else cp.asarray(index)
    runs = set()
    for _ in range(6):
        out = cp.zeros(shape, dtype=cp.float32) + 1
        backend.scatter_add(out, device_index, cp.asarray(values))
        runs.add(out.get().tobytes())
    np.testing.assert_allclose(out.get(), reference + 1, rtol=1e-6, atol=1e-6)
    assert len(runs) == 1


@pytest.mark.parametrize("call", [
    lambda cp, a: cp.maximum.reduce(a, axis=0),
    lambda cp, a: cp.maximum.accumulate(a, axis=0),
    lambda cp, a: cp.maximum.at(a, cp.asarray([0, 0]), 1.0),
    lambda cp, a: cp.multiply.reduceat(a, cp.asarray([0, 1])),
])
def test_ufunc_methods_exist_for_the_ufuncs_cupy_has_them_for(cp, a, call):
    with pytest.raises(NotImplementedError):
        call(cp, a)
    assert cp.add.reduce(a, axis=0).shape == (3,) and cp.add.accumulate(a, axis=0).shape == (2, 3)


def test_a_ufunc_whose_output_overlaps_an_input_copies_that_input_first(cp, a, launches):
    """CuPy's ufuncs copy an input that overlaps `out` unless it is the very same array object (_kernel.pyx)."""
    expected = a.get()[:, ::-1] + 1
    with launches() as counted:
        cp.add(a[:, ::-1], 1, out=a)
    assert dict(counted) == {"elementwise": 1, "copy": 1}
    np.testing.assert_array_equal(a.get(), expected)
    with launches() as counted:
        a += 1
    assert dict(counted) == {"elementwise": 1}


@requires_standin
@pytest.mark.parametrize("call", [
    lambda cp, a: cp.sum(a, axis=0, out=a[0]),
    lambda cp, a: a.max(axis=1, out=a[:, 0]),
    lambda cp, a: cp.cumsum(a, axis=1, out=a),
    lambda cp, a: __import__("cupyx").scatter_add(a, cp.asarray([0, 0]), a[1]),
    lambda cp, a: cp.fuse(lambda x, y: x.__iadd__(y))(a[:, :2], a[:, 1:]),
])
def test_kernels_that_do_not_guard_their_output_refuse_an_overlapping_one(cp, a, call):
    with pytest.raises(ValueError, match="overlaps"):
        call(cp, a)


def test_a_fused_kernel_may_update_an_argument_passed_twice(cp, a):
    cp.fuse(lambda x, y: x.__iadd__(y))(a, a)
    np.testing.assert_array_equal(a.get(), 2 * np.arange(6, dtype=np.float32).reshape(2, 3))
    cp.fuse(lambda x, y: x.__iadd__(y))(a[:, :2], a[:, :2])   # two views of one layout: thread i owns element i
    np.testing.assert_array_equal(a.get()[:, :2], 4 * np.arange(6, dtype=np.float32).reshape(2, 3)[:, :2])


def copy_then_sum(x, out):
    out[...] = x
    return __import__("cupy").sum(x, axis=-1)


@requires_standin
def test_a_write_to_an_argument_in_a_body_that_reduces_is_refused(cp, a):
    """CuPy makes such a body a ReductionKernel whose pre-map takes its arguments by value: on a GPU the write is
    silently lost (attention's backward once read uninitialised memory this way), so the stand-in refuses it."""
    out = cp.empty_like(a)
    with pytest.raises(ValueError, match="'copy_then_sum' writes its argument 1 in place in a body that ends in a "
                                         "reduction"):
        cp.fuse(copy_then_sum)(a, out)
    np.testing.assert_array_equal(cp.fuse(lambda x: cp.sum(x * 2, axis=-1))(a).get(), a.get().sum(-1) * 2)


@pytest.mark.parametrize("call", [
    lambda cp, a: cp.sum(a, initial=0.0),                # NumPy has initial= and where=, CuPy 13.6 neither
    lambda cp, a: cp.max(a, axis=0, where=a > 0),
    lambda cp, a: a.sum(where=a > 0),
    lambda cp, a: cp.exp(a, where=a > 0),                # ufuncs take out, dtype and casting only
    lambda cp, a: cp.add(a, a, order="C"),
    lambda cp, a: cp.concatenate([a, a], 0, None, None, "same_kind", 1),
    lambda cp, a: cp.argpartition(a, 1, axis=0, kind="introselect"),
    lambda cp, a: cp.clip(a, 0, 1, casting="unsafe"),
])
def test_keywords_numpy_takes_and_cupy_does_not_are_refused(cp, a, call):
    with pytest.raises(TypeError):
        call(cp, a)


@requires_standin
def test_the_signatures_are_cupys_own_definitions():
    sig = NAMES["signatures"]
    assert sig["cupy.sum"]["params"] == ["a", "axis", "dtype", "out", "keepdims"]
    assert sig["cupy.max"] == sig["cupy.amax"] and "initial" not in sig["cupy.amax"]["params"]
    assert sig["cupy.concatenate"]["params"][0] == "tup" and sig["cupy.ndarray.reshape"]["varargs"]
    assert sig["cupy.linalg.norm"]["params"] == ["x", "ord", "axis", "keepdims"]
    assert len(sig) > 250


@pytest.mark.parametrize("ord_, axis", [(None, None), (2, None), (None, 1), (2, 0), (1, 1), (np.inf, 0), (-np.inf, 1),
                                        (0, 1), (3, 1), ("fro", None), ("fro", (0, 1)), (1, (0, 1)),
                                        (np.inf, (1, 0))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_linalg_norm_is_numpys(cp, ord_, axis, keepdims):
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    if ord_ == 2 and axis is None:
        x = x[0]
    got = cp.linalg.norm(cp.asarray(x), ord=ord_, axis=axis, keepdims=keepdims)
    expected = np.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-5)


def test_linalg_norm_launches_as_cupy_computes_it(cp, a, launches):
    with launches() as counted:
        cp.linalg.norm(a)            # sqrt((x * x).sum())
    assert dict(counted) == {"elementwise": 2, "reduction": 1}
    with launches() as counted:
        cp.linalg.norm(a, axis=1)    # one _norm_ord2 reduction kernel
    assert dict(counted) == {"reduction": 1}
    with pytest.raises(NotImplementedError):
        cp.linalg.svd(a)


@pytest.mark.parametrize("dtype, scalar, cupy_dtype", [
    (np.float32, np.float64(0.5), np.float64),    # a NumPy scalar is strong (CuPy 13: float32, by value)
    (np.float16, 1e5, np.float16),                # a Python float is weak: float16, inf (CuPy 13: float32)
    (np.uint8, 200, np.uint8),
    (np.int8, 1, np.int8),
    (np.float32, np.float64(1e300), np.float64),
    (np.int32, 1.5, np.float64),                  # a weak scalar of a higher kind: its own type
    (np.float32, 0.5, np.float32),
    (np.int32, np.int64(1), np.int64),            # CuPy 13: int32
])
def test_scalars_are_typed_as_cupy_14_types_them(cp, dtype, scalar, cupy_dtype):
    """CuPy 14.2 follows NEP 50 (_kernel.pyx guess_routine, _scalar.pyx CScalar): a NumPy scalar counts by its
    dtype, a Python scalar as the arrays' type when its kind is not above theirs."""
    x = cp.ones(3, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # 1e5 overflows float16
        assert (x + scalar).dtype == cupy_dtype and cp.add(scalar, x).dtype == cupy_dtype


@pytest.mark.parametrize("dtype, scalar", [(np.int8, 300), (np.uint8, -1)])
def test_a_python_int_out_of_the_arrays_range_is_an_overflow_error(cp, dtype, scalar):
    with pytest.raises(OverflowError):
        cp.ones(3, dtype=dtype) + scalar


def test_a_scalar_keeps_its_precision_in_the_loop_cupy_picks(cp):
    x = cp.zeros(2, dtype=cp.float64)
    assert (x + 0.1).get().tolist() == [0.1, 0.1]
