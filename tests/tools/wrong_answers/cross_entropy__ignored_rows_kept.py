"""A wrong answer: the loss leaves the ignored rows out, but backward gives them p - q like any other row."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"ignored row"


class CrossEntropy(Function):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        q = (1 - label_smoothing) * np.eye(c)[np.where(valid, target, 0)] + label_smoothing / c
        z = x - x.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.save_for_backward(np.exp(log_p), q)
        self.reduction, self.count = reduction, max(int(valid.sum()), 1)
        loss = -(q * log_p).sum(axis=1) * valid
        if reduction == "none":
            return loss
        return np.asarray(loss.sum() if reduction == "sum" else loss.sum() / self.count)

    def backward(self, g):
        p, q = self.saved_tensors
        if self.reduction == "none":
            return (p - q) * g[:, None], None
        scale = g if self.reduction == "sum" else g / self.count
        return (p - q) * scale, None
