"""The run folder: the presets and the settings a fit resolves from them, config.json, the tokenizer and models read
back from it, its lock, its checkpoints and the BLAS threads it records."""
