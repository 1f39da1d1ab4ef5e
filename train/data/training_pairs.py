"""The training pairs of a run as token ids, and their segmentation in each epoch (one, or drawn anew each epoch by
BPE-dropout)."""
from .bpe_dropout import BPEDropout
from .encoding import encode_pairs


class TrainingPairs:
    """parts: [(language, source lines, target lines)], the first in the run's own source language; each part is
    encoded with its source tag, and `src`/`tgt` hold all parts' ids in that order."""

    def __init__(self, tok, parts, src, tgt, max_len, settings, world):
        self.src, self.tgt = [], []
        for lang, s_lines, t_lines in parts:
            x, y = encode_pairs(tok, s_lines, t_lines, max_len, "training" if lang == src else
                                f"{lang}->{tgt} training", lang)
            self.src += x
            self.tgt += y
        self.max_len, self.world = max_len, world
        self.alpha, self.seed = settings.bpe_dropout, settings.seed
        self.bpe_dropout = BPEDropout(tok) if self.alpha else None
        self.sampled = None   # (epoch, source ids, target ids): that epoch's BPE-dropout segmentation

    def of_epoch(self, epoch):
        """(source ids, target ids) of the training pairs in an epoch: their one segmentation, or with BPE-dropout
        one drawn for the epoch from (seed, epoch) (the same on every rank and after a resume); a pair whose drawn
        segmentation is too long for the model keeps its deterministic one."""
        if self.bpe_dropout is None:
            return self.src, self.tgt
        if self.sampled is None or self.sampled[0] != epoch:
            n = len(self.src)
            both = self.bpe_dropout(self.src + self.tgt, self.alpha, self.seed, epoch, self.world)
            src, tgt = both[:n], both[n:]
            for i, (x, y) in enumerate(zip(src, tgt)):
                if len(x) >= self.max_len or len(y) >= self.max_len:
                    src[i], tgt[i] = self.src[i], self.tgt[i]
            self.sampled = (epoch, src, tgt)
        return self.sampled[1:]
