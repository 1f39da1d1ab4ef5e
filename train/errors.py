"""The exception types for problems a user can fix; the CLI prints their one-line message and no traceback."""


class TrainError(Exception):
    """A problem found while running (a missing file, a damaged checkpoint, no network): exit status 1."""

    exit_status = 1


class UsageError(TrainError):
    """Flags that cannot work together or on this machine (sizes that make no model, --device cuda without a GPU):
    exit status 2, like argparse's own errors."""

    exit_status = 2
