"""The token ids of every vocabulary and the decoding length limit, in one place for transformer/ and train/.

train/'s SentencePiece models are trained with these ids; decoding starts at BOS_ID, stops at EOS_ID and never writes
PAD_ID, and writes at most MAX_LEN_A x the source length + MAX_LEN_B tokens.
"""
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
MAX_LEN_A, MAX_LEN_B = 1.5, 10
