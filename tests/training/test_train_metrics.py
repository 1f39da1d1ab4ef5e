"""BLEU and chrF as the project reports them: sacreBLEU corpus scores, cased 13a, with signatures; checked against
scores computed by hand."""
import math

import pytest

from train.evaluation import metrics

REFS = ["A man in a blue shirt is standing on a ladder.", "Two dogs play in the snow.", "A girl reads a book."]


def test_identical_text_scores_100_with_the_standard_signature():
    score, signature = metrics.bleu(REFS, REFS)
    assert score == pytest.approx(100.0)
    assert "case:mixed" in signature and "tok:13a" in signature and "nrefs:1" in signature
    chrf, chrf_signature = metrics.chrf(REFS, REFS)
    assert chrf == pytest.approx(100.0) and "nc:6" in chrf_signature


def test_bleu_is_cased_unless_lowercase_is_asked_for():
    shouted = [r.upper() for r in REFS]
    assert metrics.bleu(shouted, REFS)[0] < 10
    score, signature = metrics.bleu(shouted, REFS, lowercase=True)
    assert score == pytest.approx(100.0) and "case:lc" in signature


def test_bleu_matches_a_hand_computed_case():
    """"the cat sat on a mat" against "the cat sat on the mat": 5 of 6 unigrams match (clipped: one "the"), 3 of 5
    bigrams, 2 of 4 trigrams, 1 of 3 4-grams, equal lengths (no brevity penalty): BLEU = (5/6 * 3/5 * 2/4 * 1/3)^(1/4)
    = 12^(-1/4)."""
    assert metrics.bleu(["the cat sat on a mat"], ["the cat sat on the mat"])[0] == pytest.approx(100 * 12 ** -0.25)


def test_corpus_bleu_sums_the_counts_over_sentences_and_penalises_brevity():
    """Adding "a dog" against "a dog runs": unigrams (5 + 2) / (6 + 2), bigrams (3 + 1) / (5 + 1), trigrams 2 / 4,
    4-grams 1 / 3, counted over the corpus; 8 hypothesis tokens against 9 reference tokens: brevity penalty
    exp(1 - 9/8)."""
    hyps, refs = ["the cat sat on a mat", "a dog"], ["the cat sat on the mat", "a dog runs"]
    expected = 100 * math.exp(1 - 9 / 8) * (7 / 8 * 4 / 6 * 2 / 4 * 1 / 3) ** 0.25
    assert metrics.bleu(hyps, refs)[0] == pytest.approx(expected)


def test_chrf_matches_a_hand_computed_case():
    """"abcdefgx" against "abcdefgh": of the 9 - n character n-grams on each side, the 8 - n that avoid the last
    character match, so precision = recall = (8 - n) / (9 - n) for n = 1..6, and chrF (beta 2) is their mean."""
    expected = 100 * sum((8 - n) / (9 - n) for n in range(1, 7)) / 6
    assert metrics.chrf(["abcdefgx"], ["abcdefgh"])[0] == pytest.approx(expected)
