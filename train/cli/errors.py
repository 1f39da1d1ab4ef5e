"""The exception types for problems a user can fix; the CLI prints their one-line message and no traceback."""


class TrainError(Exception):
    """A problem found while running (a missing file, a damaged checkpoint, no network): exit status 1."""

    exit_status = 1


class UsageError(TrainError):
    """Flags that cannot work together or on this machine (sizes that make no model, --device cuda without a GPU):
    exit status 2, like argparse's own errors."""

    exit_status = 2


def error_message(command, e):
    """(one-line message, exit status) for an exception a user should see without a traceback; (None, 1) for one
    that is a bug."""
    message, status = _message(e)
    # a name read from a file (a key, a folder) may hold a line break: the message stays one line
    return (None if message is None else message.translate(ESCAPED_BREAKS)), status


# the characters that end a line (str.splitlines's), each written as its escape: "\n", "\x85", ...
ESCAPED_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def _message(e):
    if isinstance(e, TrainError):
        return str(e), e.exit_status
    if isinstance(e, KeyboardInterrupt):
        return "interrupted", 130
    if isinstance(e, OSError):  # the machine's side: a full disk, a folder that may not be written, ...
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{e.strerror or e}", 1
    if isinstance(e, MemoryError):  # also CuPy's OutOfMemoryError
        return f"out of memory ({type(e).__name__}: {e}); a smaller --batch-tokens needs less", 1
    return None, 1
