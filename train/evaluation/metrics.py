"""Corpus BLEU and chrF with sacreBLEU, on detokenized text, with the signatures that make scores comparable."""
from sacrebleu.metrics import BLEU, CHRF


def bleu(hypotheses, references, lowercase=False):
    """(score, signature) of sacreBLEU's corpus BLEU: 13a tokenization, cased unless lowercase."""
    metric = BLEU(tokenize="13a", lowercase=lowercase)
    return metric.corpus_score(list(hypotheses), [list(references)]).score, str(metric.get_signature())


def chrf(hypotheses, references):
    """(score, signature) of sacreBLEU's chrF (character 6-grams, beta 2)."""
    metric = CHRF()
    return metric.corpus_score(list(hypotheses), [list(references)]).score, str(metric.get_signature())
