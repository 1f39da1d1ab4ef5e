"""im2col and col2im: the sliding windows of a convolution or a pooling as a plain array, and back.

im2col copies each window of x (N, C, H, W) into cols (N, C, kh, kw, Ho, Wo): cols[n, c, i, j, y, x] is the padded
input at row y*sh + i*dh, column x*sw + j*dw. A convolution is then one matrix product, a pooling one reduction.
col2im is its adjoint (the transpose of the linear map): each cols entry is added back to the input place it was
copied from, so the entries of overlapping windows that share a place are summed, and the padding is dropped. That
sum is the gradient of a shared input: d im2col(x) / dx applied to g is col2im(g).

Both are loops over the kh * kw kernel offsets, each one strided slice of the whole batch (the same code on NumPy and
CuPy, kh * kw launches). `im2col` and `col2im` take an array or a Tensor (then through the ops Im2Col / Col2Im, which
are each other's backward), so that a backward written with them can be differentiated again.
"""
from collections import namedtuple

from .. import backend
from ..core import Function
from .array_ops import is_array

Window = namedtuple("Window", "kh kw sh sw ph pw dh dw")


def pair(v, name):
    """(v, v) for an int, a pair as a tuple; anything else refused naming the argument."""
    pair_ = (v, v) if isinstance(v, int) and not isinstance(v, bool) else tuple(v)
    if len(pair_) != 2 or not all(isinstance(n, int) and n >= 0 for n in pair_):
        raise ValueError(f"{name} must be an int or a pair of non-negative ints, got {v!r}")
    return pair_


def window(kernel_size, stride, padding, dilation):
    """A Window from PyTorch's arguments (each an int or a pair)."""
    (kh, kw), (sh, sw) = pair(kernel_size, "kernel_size"), pair(stride, "stride")
    (ph, pw), (dh, dw) = pair(padding, "padding"), pair(dilation, "dilation")
    if min(kh, kw, sh, sw, dh, dw) < 1:
        raise ValueError(f"kernel_size, stride and dilation must be positive, got {kernel_size}, {stride}, {dilation}")
    return Window(kh, kw, sh, sw, ph, pw, dh, dw)


def out_size(shape, w):
    """(Ho, Wo) of the windows over an input of shape (..., H, W); refuses an input smaller than one window."""
    H, W = shape[-2:]
    Ho = (H + 2 * w.ph - w.dh * (w.kh - 1) - 1) // w.sh + 1
    Wo = (W + 2 * w.pw - w.dw * (w.kw - 1) - 1) // w.sw + 1
    if Ho < 1 or Wo < 1:
        raise ValueError(f"an input of size {H}x{W} (padded by {w.ph}, {w.pw}) is smaller than the kernel "
                         f"{w.kh}x{w.kw} at dilation {w.dh}, {w.dw}")
    return Ho, Wo


def _slices(w, i, j, Ho, Wo):
    """The strided slices of the padded input that kernel offset (i, j) reads."""
    top, left = i * w.dh, j * w.dw
    return (..., slice(top, top + w.sh * (Ho - 1) + 1, w.sh), slice(left, left + w.sw * (Wo - 1) + 1, w.sw))


def im2col_array(x, w, pad_value=0.0):
    """x (N, C, H, W) -> cols (N, C, kh, kw, Ho, Wo), an array; the padding holds pad_value."""
    xp = backend.xp_of(x)
    N, C, H, W = x.shape
    Ho, Wo = out_size(x.shape, w)
    padded = x
    if w.ph or w.pw:
        padded = xp.full((N, C, H + 2 * w.ph, W + 2 * w.pw), pad_value, dtype=x.dtype)
        padded[:, :, w.ph:w.ph + H, w.pw:w.pw + W] = x
    cols = xp.empty((N, C, w.kh, w.kw, Ho, Wo), dtype=x.dtype)
    for i in range(w.kh):
        for j in range(w.kw):
            cols[:, :, i, j] = padded[_slices(w, i, j, Ho, Wo)]
    return cols


def col2im_array(cols, w, in_shape):
    """cols (N, C, kh, kw, Ho, Wo) -> (N, C, H, W): each entry added back where im2col took it from (overlaps sum)."""
    xp = backend.xp_of(cols)
    N, C, H, W = in_shape
    Ho, Wo = cols.shape[-2:]
    padded = xp.zeros((N, C, H + 2 * w.ph, W + 2 * w.pw), dtype=cols.dtype)
    for i in range(w.kh):
        for j in range(w.kw):
            padded[_slices(w, i, j, Ho, Wo)] += cols[:, :, i, j]   # += : windows that overlap add up
    return padded[:, :, w.ph:w.ph + H, w.pw:w.pw + W]


class Im2Col(Function):
    """cols = im2col(x): a linear copy, so d cols = im2col(dx), and its backward is the adjoint, dx = col2im(g)."""

    def forward(self, x, *, w):
        self.w, self.in_shape = w, x.shape
        return im2col_array(x, w)

    def backward(self, g):
        return col2im(g, self.w, self.in_shape)


class Col2Im(Function):
    """x = col2im(cols): the adjoint of im2col, so its backward is im2col(g)."""

    def forward(self, cols, *, w, in_shape):
        self.w = w
        return col2im_array(cols, w, in_shape)

    def backward(self, g):
        return im2col(g, self.w)


def im2col(x, w):
    """x (N, C, H, W) -> cols (N, C, kh, kw, Ho, Wo), for an array or a Tensor (recorded)."""
    return im2col_array(x, w) if is_array(x) else Im2Col.apply(x, w=w)


def col2im(cols, w, in_shape):
    """cols (N, C, kh, kw, Ho, Wo) -> (N, C, H, W), overlaps summed, for an array or a Tensor (recorded)."""
    return col2im_array(cols, w, in_shape) if is_array(cols) else Col2Im.apply(cols, w=w, in_shape=in_shape)


__all__ = ["Window", "window", "out_size", "im2col", "col2im", "im2col_array", "col2im_array", "Im2Col", "Col2Im"]
