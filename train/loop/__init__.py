"""The training loop: one step, the trainer that runs the epochs, validation, the training state, checkpoints
and stopping."""
