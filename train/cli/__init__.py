"""The command line's plumbing, shared by every package: the one-line errors and the CLI's name, argparse value types,
--distributed (the MPI job) and the progress bars and lines."""
