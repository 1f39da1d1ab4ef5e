"""BLEU and chrF as the project reports them: sacreBLEU corpus scores, cased 13a, with signatures."""
import pytest
import sacrebleu

from train import metrics

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


def test_scores_match_sacrebleus_own_corpus_functions():
    hyps = ["A man in a shirt stands on a ladder.", "Two dogs are playing in snow.", "The girl reads a book."]
    assert metrics.bleu(hyps, REFS)[0] == pytest.approx(sacrebleu.corpus_bleu(hyps, [REFS]).score)
    assert metrics.chrf(hyps, REFS)[0] == pytest.approx(sacrebleu.corpus_chrf(hyps, [REFS]).score)
