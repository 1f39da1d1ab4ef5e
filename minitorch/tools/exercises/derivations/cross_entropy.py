"""cross_entropy: per row, d loss / dx = p - q (p = softmax(x), q the smoothed one-hot targets), times what the
reduction sends to the row: g ('sum'), g / n_valid ('mean'), g[r] ('none'); 0 on an ignored row."""
import numpy as np

from minitorch.autograd import Function
from minitorch.tools.exercises.mutation import factor, pick, scale, term


def FACTS(arrays, options):
    target = options["target"]
    return {"valid": int((target != options["ignore_index"]).sum()), "n": len(target),
            "e": options["label_smoothing"]}


WORDS = {
    "p": "the softmax p in p - q",
    "q": "the targets q in p - q",
    ("targets", "hard"): "q is the one-hot target without label smoothing: backward leaves out the smoothing (q = "
                         "(1 - e) one_hot + e / C, e = {e})",
    ("targets", "others"): "q spreads the smoothing over the C - 1 other classes (e / (C - 1) off the target), where "
                           "it spreads e / C over all C, the target's class too (q = (1 - e) one_hot + e / C, e = {e})",
    "uniform": "the smoothing's uniform part e / C of q (e = {e})",
    "1 - e": "the factor (1 - e) on q's one-hot part (e = {e})",
    "valid": "the mask of the rows that are not ignored: an ignored row (target = ignore_index) gets a gradient "
             "where it gets 0",
    "1/n_valid": "the 'mean' reduction's division by the count of rows that are not ignored (n_valid = {valid})",
    ("count", "all_rows"): "'mean' divided by all {n} rows where it divides by the {valid} rows that are not ignored "
                           "(target != ignore_index)",
    ("count", "ignored"): "'mean' divided by the count of ignored rows where it divides by the {valid} rows that are "
                          "not ignored",
}


class CrossEntropy(Function):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        one_hot = np.eye(c, dtype=x.dtype)[np.where(valid, target, 0)]
        q = (1 - label_smoothing) * one_hot + label_smoothing / c
        z = x - x.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.save_for_backward(log_p, target)
        self.e, self.ignore_index, self.reduction = label_smoothing, ignore_index, reduction
        loss = -(q * log_p).sum(axis=1) * valid
        if reduction == "none":
            return loss
        total = loss.sum()
        return np.asarray(total if reduction == "sum" else total / max(int(valid.sum()), 1))

    def backward(self, g):
        log_p, target = self.saved_tensors
        n, c = log_p.shape
        valid = target != self.ignore_index
        one_hot = np.eye(c, dtype=log_p.dtype)[np.where(valid, target, 0)]
        q = pick("targets", factor("1 - e", 1 - self.e) * one_hot + term("uniform", self.e / c), hard=one_hot,
                 others=(1 - self.e) * one_hot + self.e / (c - 1) * (1 - one_hot))
        rows = g if self.reduction == "none" else np.full(n, g)
        if self.reduction == "mean":
            count = pick("count", max(int(valid.sum()), 1), all_rows=n, ignored=max(n - int(valid.sum()), 1))
            rows = rows * scale("1/n_valid", 1 / count)
        rows = rows * factor("valid", valid)
        return (term("p", np.exp(log_p)) - term("q", q)) * rows[:, None], None
