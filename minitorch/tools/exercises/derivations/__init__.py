"""The reference answer of each exercise, written as a student's whole file whose backward marks its named parts
(terms, factors, scales, blocks, steps, and the wrong alternatives a derivation can take): mutation.py makes the
wrong derivations from them, and the grader names the one a failing answer matches. Read as text, never imported."""
