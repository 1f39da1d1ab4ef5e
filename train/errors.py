"""The one exception type for problems a user can fix (a missing file, a bad flag, no network)."""


class TrainError(Exception):
    """Raised with a one-line message; the CLI prints it on stderr and exits with status 1 (no traceback)."""
