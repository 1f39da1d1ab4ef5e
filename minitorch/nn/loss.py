"""Loss modules with PyTorch's names and arguments: each holds its options and calls the minitorch.functional loss."""
from .. import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in F.REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {F.REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """Mean (or sum, or none) of (input - target)^2; input and target of one shape."""

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean (or sum, or none) of |input - target|; input and target of one shape."""

    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), reduced."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target), reduced."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (input in [0, 1]) against targets of the same shape."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of sigmoid(input), from the logits without overflow; pos_weight scales the positives."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits (N, C) (or (C,)) against class ids (N,) (or ()), with ignore_index, label_smoothing
    and reduction as in PyTorch. Class weights are not supported; for a sequence, F.cross_entropy takes (N, T, C)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: class weights (weight=) are not supported by minitorch")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        if input.ndim == 1:   # one sample: PyTorch's unbatched form
            loss = F.cross_entropy(input.reshape(1, -1), _batched(target), self.ignore_index, self.label_smoothing,
                                   self.reduction)
            return loss.reshape(()) if self.reduction == "none" else loss
        if input.ndim != 2:
            raise ValueError(f"CrossEntropyLoss: input of shape {input.shape}: minitorch takes (N, C) or (C,) here "
                             f"(PyTorch's (N, C, d1, ...) puts the classes second; move them last and use "
                             f"F.cross_entropy, which takes (N, T, C))")
        return F.cross_entropy(input, target, self.ignore_index, self.label_smoothing, self.reduction)

    def extra_repr(self):
        return f"ignore_index={self.ignore_index}, reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"


def _batched(target):
    """A 0-d class id as a batch of one."""
    return target.reshape(1) if hasattr(target, "reshape") else [target]


class NLLLoss(_Loss):
    """The negative log-likelihood of log-probabilities (N, C) (or (C,)) at class ids (N,): with a LogSoftmax before
    it, the same as CrossEntropyLoss; weight (C,) and ignore_index as PyTorch's."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)
