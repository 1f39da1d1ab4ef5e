"""Stopping a run between steps: Ctrl-C, SIGTERM or a STOP file ask for a stop after the current step (and a save)."""
import signal
import sys
import threading

from tqdm import tqdm

STOP_FILE = "STOP"  # a file of this name in the run folder asks the run to stop after the current step and save


class StopRequest:
    """Ctrl-C (SIGINT) or SIGTERM asks training to stop after the current step; a second one stops at once, without
    saving (the `last` on disk is then the previous one, intact: saves are atomic)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, quiet=False):
        self.requested = None   # the number of the signal that asked, once one has
        self.previous, self.quiet = {}, quiet

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self._handler) for sig in self.SIGNALS}
        return self

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = signum
        if not self.quiet:
            tqdm.write("stopping after this step, then saving `last` (Ctrl-C again to quit without saving)",
                       file=sys.stderr)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}

    @property
    def exit_status(self):
        """128 + the signal's number, as a shell reports a process stopped by it (130 for Ctrl-C)."""
        return 128 + int(self.requested or signal.SIGINT)
