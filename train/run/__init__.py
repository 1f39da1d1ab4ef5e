"""The run folder: the presets, the typed settings a fit resolves from them, config.json (read once per command), the
tokenizer and models read back from it, its lock, its checkpoints and the BLAS threads it records."""
