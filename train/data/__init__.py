"""The data: corpora (reading, downloading Multi30k, the generated demo corpus), sentence pairs, the SentencePiece
tokenizer and batching."""
