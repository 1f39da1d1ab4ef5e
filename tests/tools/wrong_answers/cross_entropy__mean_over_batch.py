"""A wrong answer: 'mean' divides the gradient by the batch size N, where it divides by the rows not ignored."""
import numpy as np

from minitorch.autograd import Function

MISTAKE = r"divided by all \d+ rows"


class CrossEntropy(Function):
    def forward(self, x, target, ignore_index, label_smoothing, reduction):
        n, c = x.shape
        valid = target != ignore_index
        q = (1 - label_smoothing) * np.eye(c)[np.where(valid, target, 0)] + label_smoothing / c
        z = x - x.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.save_for_backward(np.exp(log_p), q, valid)
        self.reduction = reduction
        loss = -(q * log_p).sum(axis=1) * valid
        if reduction == "none":
            return loss
        return np.asarray(loss.sum() if reduction == "sum" else loss.sum() / max(int(valid.sum()), 1))

    def backward(self, g):
        p, q, valid = self.saved_tensors
        rows = (g if self.reduction == "none" else np.full(len(p), g)) * valid
        if self.reduction == "mean":
            rows = rows / len(p)
        return (p - q) * rows[:, None], None
