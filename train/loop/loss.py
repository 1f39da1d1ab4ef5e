"""The training loss: label-smoothed cross-entropy over the target tokens, padding ignored; one rank's share of a
batch is scaled by the whole batch's token count, so that the ranks' gradients add up to the batch's."""
import minitorch.functional as F

from ..data.tokenizer import PAD_ID


def share_loss(logits, tgt_out, label_smoothing, n_tokens=None):
    """The label-smoothed cross-entropy (a scalar tensor): the mean over tgt_out's tokens, or, for one rank's share
    of a batch, their sum over n_tokens (the whole batch's token count), so the ranks' gradients add up to the
    gradient of the batch's mean."""
    if n_tokens is None:
        return F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, label_smoothing=label_smoothing)
    return F.cross_entropy(logits, tgt_out, ignore_index=PAD_ID, label_smoothing=label_smoothing,
                           reduction="sum") / n_tokens
