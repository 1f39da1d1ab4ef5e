"""train: the translation pipeline on top of transformer/ and minitorch: corpora, tokenizer, batches, the training
loop, evaluation, translation and plots, behind the CLI `python3 -m train <command>`."""
