"""The data: corpora (reading, downloading Multi30k, the generated demo corpus), sentence pairs, the SentencePiece
tokenizer, each epoch's training pairs (BPE-dropout) and batching."""
