"""attention: backward runs the forward's four lines in reverse: out = a v (dv = a^T g, da = g v^T), the dropout
(dw = da keep / (1 - p)), the softmax (ds = w (dw - sum(dw w))), s = q k^T / sqrt(d) (dq = ds k / sqrt(d),
dk = ds^T q / sqrt(d))."""
import numpy as np

from minitorch.autograd import Function
from minitorch.ops.dropout import keep_mask
from minitorch.tools.exercises.mutation import factor, pick, scale, step, term


def FACTS(arrays, options):
    d, p = arrays[0].shape[-1], options["dropout_p"]
    return {"d": d, "sqrt_d": f"{np.sqrt(d):.3f}", "p": p}


WORDS = {
    "1/sqrt(d)": "the scale 1/sqrt(d) of dq and dk (d = {d}: 1/sqrt({d}) = 1/{sqrt_d})",
    ("dropout in dw", "drop"): "dw is g v^T without the keep mask and the scale 1/(1 - p), as if dropout were off: "
                               "backward leaves out the keep mask (dw = (g v^T) * keep / (1 - p))",
    "keep": "the keep mask in dw = (g v^T) * keep / (1 - p)",
    "1/(1 - p)": "the dropout's scale 1/(1 - p) in dw (p = {p})",
    ("a in dv", "w"): "dv uses the weights before dropout (w) where out = a v reads a = w keep / (1 - p)",
    "row sum": "the softmax's row-sum term sum(dw * w) in ds = w (dw - sum(dw w))",
    ("softmax at", "scores"): "the softmax's rule ds = w (dw - sum(dw w)) is applied to the scores s = q k^T / sqrt(d) "
                              "in place of the weights w = softmax(s): the softmax's derivative is in its output w",
    ("ds weight", "dw_only"): "the softmax's row sum is sum(dw) where it is sum(dw * w)",
    ("dk", "ds_not_transposed"): "dk is ds q where it is ds^T q (s = q k^T: each key's row of ds is a column)",
    ("dk sign", "minus"): "dk has its sign flipped (dk = ds^T q / sqrt(d))",
    ("dv", "a_not_transposed"): "dv is a g where it is a^T g (out = a v: dv_kj = sum_i a_ik g_ij)",
    ("dw", "v_not_transposed"): "dw is g v where it is g v^T (out = a v: da_ik = sum_j g_ij v_kj)",
    ("grads", "q_k_swapped"): "dq and dk are swapped",
}


class ScaledDotProductAttention(Function):
    def forward(self, q, k, v, mask, words, dropout_p):
        self.scale = q.shape[-1] ** -0.5   # a Python float: the product keeps q's dtype
        s = q @ k.swapaxes(-1, -2) * self.scale
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isneginf(m), 0, m))
        total = e.sum(axis=-1, keepdims=True)
        w = e / np.where(total == 0, 1, total)
        keep = keep_mask(words, dropout_p) if dropout_p else None
        self.save_for_backward(q, k, v, w, keep)
        self.dropout_scale = 1 / (1 - dropout_p)
        return (w if keep is None else w * keep * self.dropout_scale) @ v

    def backward(self, g):
        q, k, v, w, keep = self.saved_tensors
        a = w if keep is None else w * keep * self.dropout_scale
        dw = pick("dw", g @ v.swapaxes(-1, -2), v_not_transposed=g @ v)
        if keep is not None:
            if step("dropout in dw"):
                dw = dw * factor("keep", keep) * scale("1/(1 - p)", self.dropout_scale)
        ds = pick("softmax at", w, scores=q @ k.swapaxes(-1, -2) * self.scale) * (dw - term("row sum", (dw * pick(
            "ds weight", pick("softmax at", w, scores=q @ k.swapaxes(-1, -2) * self.scale), dw_only=1)).sum(
                axis=-1, keepdims=True)))
        dq = ds @ k * scale("1/sqrt(d)", self.scale)
        dk = pick("dk", ds.swapaxes(-1, -2) @ q, ds_not_transposed=ds @ q)
        dk = pick("dk sign", dk, minus=-dk) * scale("1/sqrt(d)", self.scale)
        dv = pick("dv", pick("a in dv", a, w=w).swapaxes(-1, -2) @ g, a_not_transposed=a @ g)
        return pick("grads", (dq, dk, dv, None, None), q_k_swapped=(dk, dq, dv, None, None))
