"""Broken fuse kernels that scripts/cuda_sources.py must reject (tests/test_cuda_sources.py plants them)."""
from minitorch import backend


@backend.fuse
def planted_premap_write(xp, x, out):
    """x copied into out in a body that ends in a reduction: on a GPU the copy is lost."""
    out[...] = x
    return xp.sum(x * x, axis=-1)


@backend.fuse
def planted_syntax_error(xp, x):
    """A ufunc whose CUDA routine does not compile, traced into the kernel like any other ufunc."""
    broken = xp._core.create_ufunc("planted_broken", ("f->f",), "out0 = in0 +* 1")
    return broken(x) * 2


@backend.fuse
def planted_refused_at_3d(xp, x):
    """Plain on 2-D arrays; on 3-D ones it indexes a value of the body, which CuPy's first fusion cannot trace."""
    return x[0] * 2 if x.ndim == 3 else x * 2
