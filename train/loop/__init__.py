"""The training loop: a run assembled from its parts, the trainer that runs the epochs, one step (and R-Drop's),
validation, the training state (Progress) and stopping."""
