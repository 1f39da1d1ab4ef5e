"""BPE-dropout (Provilkov et al. 2020): a training sentence segmented with some of the BPE merges left out, drawn
anew each epoch, so that the model sees a word in many segmentations (fit --bpe-dropout ALPHA).

Why not SentencePiece's own sampling (`enable_sampling=True, alpha=ALPHA`): two processes given the same
`set_random_generator_seed` draw different segmentations (sentencepiece 0.2; one process draws the same twice), so
the ranks of a --distributed job, or a run and its --resume, would build different batches. Here the draws come from
NumPy's generator seeded by (run seed, epoch, chunk of sentences), and the ranks of a job share the work (each
segments every size-th chunk; on Multi30k's 58,000 sentences of an epoch about 14 s in one process).

The merges are the SentencePiece model's: its BPE merges the adjacent pair whose joined piece has the highest score,
again and again. Dropout: at each merge step every candidate pair (each occurrence) is left out with probability
ALPHA; the best remaining pair is merged at its remaining occurrences (left to right); the word is done when no
candidate remains. With ALPHA 0 this is SentencePiece's segmentation (tests/training/test_regularisers.py checks it on a
corpus). Words are the deterministic segmentation's: a run of pieces from one that starts with "▁" to the next.
"""
import numpy as np

WORD_START = "\u2581"   # SentencePiece's mark of a word start (a space before it)
DRAWS = 1 << 16         # uniform numbers drawn at a time
CHUNK = 2048            # sentences with one generator: the unit of work of a rank


class BPEDropout:
    """Re-segments token ids of a tokenizer's BPE model with merges dropped: __call__(id lists, alpha, rng)."""

    def __init__(self, tokenizer):
        sp = tokenizer.sp
        self.piece_ids, self.rank = {}, {}
        for i in range(sp.get_piece_size()):
            if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
                continue
            piece = sp.id_to_piece(i)
            self.piece_ids[piece] = i
            if len(piece) > 1:
                self.rank[piece] = -sp.get_score(i)   # the higher the score, the earlier the merge
        self.pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        self.unk_id = sp.unk_id()
        self.tags = {i for i in range(sp.get_piece_size()) if sp.is_control(i)}   # source tags pass through

    def __call__(self, id_lists, alpha, seed, epoch, world=None):
        """id lists (a deterministic segmentation) -> the same sentences re-segmented with dropout alpha. Chunk k of
        CHUNK sentences draws from NumPy's generator seeded by (seed, epoch, k), so the result does not depend on who
        computes it: with a World of several ranks each segments every size-th chunk and all get the whole."""
        rank, size = (world.rank, world.size) if world is not None else (0, 1)
        starts = range(0, len(id_lists), CHUNK)
        mine = {k: self.chunk(id_lists[k:k + CHUNK], alpha, np.random.default_rng([seed, epoch, k // CHUNK]))
                for k in starts[rank::size]}
        if size > 1:
            mine = {k: v for part in world.allgather_object(mine) for k, v in part.items()}
        return [ids for k in starts for ids in mine[k]]

    def chunk(self, id_lists, alpha, rng):
        self.draws, self.used, self.generator = rng.random(DRAWS), 0, rng
        return [self.sentence(ids, alpha) for ids in id_lists]

    def uniform(self):
        if self.used == DRAWS:
            self.draws, self.used = self.generator.random(DRAWS), 0
        self.used += 1
        return self.draws[self.used - 1]

    def sentence(self, ids, alpha):
        out, word = [], ""
        for i in ids:
            if i in self.tags or i == self.unk_id:   # kept as they are, between words
                out += self.segment(word, alpha) if word else []
                out.append(i)
                word = ""
                continue
            piece = self.pieces[i]
            if piece.startswith(WORD_START) and word:
                out += self.segment(word, alpha)
                word = ""
            word += piece
        return out + (self.segment(word, alpha) if word else [])

    def segment(self, word, alpha):
        """A word's ids: its characters merged by the model's BPE, each candidate merge of a step (each occurrence)
        dropped with probability alpha; the best pair left is merged where it was not dropped. A draw is made only
        for a pair that would beat the best so far or repeats it: the others cannot change the step."""
        symbols, rank_of = list(word), self.rank.get
        while len(symbols) > 1:
            best, best_rank, at = None, None, []
            for i in range(len(symbols) - 1):
                pair = symbols[i] + symbols[i + 1]
                if pair == best:                 # another occurrence of the best pair: dropped on its own
                    if not (alpha and self.uniform() < alpha):
                        at.append(i)
                    continue
                rank = rank_of(pair)
                if rank is None or (best_rank is not None and rank >= best_rank) or (alpha and self.uniform() < alpha):
                    continue
                best, best_rank, at = pair, rank, [i]
            if best is None:
                break
            merged, done = [], 0
            for i in at:                     # left to right, an occurrence overlapping the last merged one waits
                if i >= done:
                    merged += symbols[done:i]
                    merged.append(best)
                    done = i + 2
            symbols = merged + symbols[done:]
        return [self.piece_ids.get(s, self.unk_id) for s in symbols]
