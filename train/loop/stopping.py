"""Stopping a run between steps: Ctrl-C, SIGTERM or a STOP file ask for a stop after the current step (and a save);
batches in a row with a non-finite loss stop it with an error (diverged_message)."""
import signal
import sys
import threading

from tqdm import tqdm

from ..cli.errors import TrainError
from ..run import checkpoint

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


def diverged_message(bad_steps, step, run_dir):
    """Why the run stopped after its skipped steps in a row (bad_steps: (epoch, batch, what, value) each) at step, and
    which checkpoint is left."""
    last = checkpoint.checkpoint_path(run_dir, "last")
    if last.is_file():
        kept = f"{last} is left as the last good checkpoint"
        try:
            kept += f" (step {checkpoint.load(last)['progress']['step']})"
        except (TrainError, KeyError, TypeError):
            pass
    else:
        kept = "No checkpoint had been saved yet"
    epoch, batch, what, value = bad_steps[-1]
    return (f"stopped: {len(bad_steps)} batches in a row gave a non-finite loss or gradient norm (the last, "
            f"epoch {epoch} batch {batch}: {what} {value}) after step {step}; the model has diverged or "
            f"the data is broken. {kept}. Try a lower --lr in a new --run-dir")
