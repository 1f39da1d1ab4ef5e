"""A wrong answer: backward spreads the smoothing over the C - 1 other classes (e / (C - 1)), where the forward (and
the stub) spread e / C over all C."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"e / C"


class CrossEntropy(Function):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        hot = np.eye(c)[np.where(valid, target, 0)]
        q = (1 - label_smoothing) * hot + label_smoothing / c
        z = x - x.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.save_for_backward(np.exp(log_p), hot, valid)
        self.e, self.reduction, self.count = label_smoothing, reduction, max(int(valid.sum()), 1)
        loss = -(q * log_p).sum(axis=1) * valid
        if reduction == "none":
            return loss
        return np.asarray(loss.sum() if reduction == "sum" else loss.sum() / self.count)

    def backward(self, g):
        p, hot, valid = self.saved_tensors
        c = p.shape[1]
        q = (1 - self.e) * hot + self.e / (c - 1) * (1 - hot)
        rows = g * valid if self.reduction == "none" else np.full(len(p), g) * valid
        if self.reduction == "mean":
            rows = rows / self.count
        return (p - q) * rows[:, None], None
