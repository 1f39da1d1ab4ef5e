"""Scoring and decoding a trained run: translating lists of sentences (greedy or beam), BLEU and chrF, several runs
decoded as one (ensemble), and the options of the commands that decode."""
