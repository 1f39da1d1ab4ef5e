"""The held-back slice (fit --held-back N): N training pairs least like the rest of the corpus, taken out of
training and scored beside validation after each epoch, so that a recipe which only fits the validation split's
distribution (which test2016 shares: all three are drawn from the same Flickr30k captions) is seen.

How the N pairs are chosen, from the training split alone (no test split is read):
  - a word is a lowercased run of letters and digits (regex \\w+), counted separately on each side over all
    training pairs;
  - a word is rare when it occurs at most RARE_COUNT times on its side of the training split;
  - a pair's rare-word rate is its rare words over its words, both sides together;
  - pairs with fewer than MIN_WORDS words on a side are not candidates (a two-word caption with one odd word would
    otherwise fill the slice);
  - the N pairs with the highest rate are held back, ties broken by the lower line number.
It is deterministic: the same corpus and N give the same slice, on every rank and after a resume. The words that are
rare because of these pairs then never reach training (nor the tokenizer), as a new sentence's unseen words would.
"""
import re
from collections import Counter
from pathlib import Path

from . import corpus
from ..cli.errors import UsageError

HELD_BACK_FILE = "held_back.tsv"   # in the run folder: the pairs held back, for reading
RARE_COUNT = 2   # a word seen at most this often on its side of the training split is rare
MIN_WORDS = 4    # the fewest words on each side of a candidate pair
WORD = re.compile(r"\w+")


def words(line):
    return WORD.findall(line.lower())


def rare_rates(src_lines, tgt_lines):
    """(rate per pair, its source words, its target words): the share of rare words in each training pair."""
    sides = [[words(line) for line in lines] for lines in (src_lines, tgt_lines)]
    counts = [Counter(w for ws in side for w in ws) for side in sides]
    rates = []
    for xs, ys in zip(*sides):
        rare = sum(counts[0][w] <= RARE_COUNT for w in xs) + sum(counts[1][w] <= RARE_COUNT for w in ys)
        rates.append(rare / max(len(xs) + len(ys), 1))
    return rates, sides


def choose(src_lines, tgt_lines, n):
    """(the line indices (sorted) of the n held-back pairs among the training lines, their rare-word rates);
    UsageError when n is more than half the candidates."""
    rates, (xs, ys) = rare_rates(src_lines, tgt_lines)
    candidates = [i for i in range(len(rates)) if len(xs[i]) >= MIN_WORDS and len(ys[i]) >= MIN_WORDS]
    if n > len(candidates) // 2:
        raise UsageError(f"--held-back {n}: the training split has {len(candidates)} pairs of at least {MIN_WORDS} "
                         f"words a side; hold back at most half of them ({len(candidates) // 2})")
    ranked = sorted(candidates, key=lambda i: (-rates[i], i))
    return sorted(ranked[:n]), [rates[i] for i in sorted(ranked[:n])]


def split_off(lines, index):
    """(the lines not at index, the lines at index): index sorted."""
    held = set(index)
    return [x for i, x in enumerate(lines) if i not in held], [lines[i] for i in index]


def write_held_back(path, held):
    """The held-back pairs as a table: line number in train.SRC, rare-word rate, source, target."""
    src, tgt, numbers, rates = held
    rows = [f"{n}\t{r:.3f}\t{x}\t{y}\n" for x, y, n, r in zip(src, tgt, numbers, rates)]
    path.write_text("line\trare_word_rate\tsource\ttarget\n" + "".join(rows), encoding="utf-8")


def read_slice(run_dir, settings):
    """(source lines, target lines) of a run's held-back pairs, read from its corpus by the line numbers in its
    held_back.tsv; None for a run without a held-back slice."""
    path = Path(run_dir) / HELD_BACK_FILE
    if not settings.held_back or not path.is_file():
        return None
    numbers = [int(row.split("\t", 1)[0]) for row in path.read_text(encoding="utf-8").splitlines()[1:]]
    src, tgt = corpus.read_parallel(settings.data_dir, "train", settings.src, settings.tgt)
    return [src[n - 1] for n in numbers], [tgt[n - 1] for n in numbers]


def held_back_summary(held, path):
    """The line fit prints for a held-back slice (what pairs.read_pairs returned as held) listed in path."""
    return (f"held back {len(held[0])} training pairs with the highest rare-word rates ({max(held[3]):.2f} to "
            f"{min(held[3]):.2f}; see train/data/held_back.py), scored beside validation; listed in {path}")
