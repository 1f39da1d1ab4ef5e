"""One writer per run folder: `fit` holds an exclusive lock on RUN_DIR/fit.lock for as long as it runs.

The lock is the kernel's (flock on the open file), not the file's existence: it goes when the process ends, however it
ends (kill -9 included), so a killed run never leaves a stale lock to clean up by hand. The file stays, and names its
last holder (pid, host, start time, command), which the holder writes just after it takes the lock. A second `fit` on
the folder opens the file without truncating it, fails to take the lock, and stops with one line naming the folder
and the holder, having written nothing. In a data-parallel job rank 0, the rank that writes the folder, holds the
lock; the other ranks only read the folder (after rank 0 has it: fit's barrier). `evaluate`, `translate` and `plot`
take no lock: they read while a run trains, and every file fit replaces is replaced whole (a temporary file, then a
rename), so they never see one half-written.
"""
import json
import math
import os
import socket
import sys
import time
from pathlib import Path

from ..cli.errors import TrainError

try:
    import fcntl
except ImportError:   # Windows: no flock; runs there are not protected against a second fit
    fcntl = None

LOCK_FILE = "fit.lock"
HOLDER_WAIT = 0.5   # seconds to wait for a holder that has just taken the lock to write its details
POLL = 0.02         # seconds between two reads of the holder's details


def lock_path(run_dir):
    return Path(run_dir) / LOCK_FILE


class RunLock:
    """The lock of one fit on its run folder (a context manager; released when it exits, or when the process ends).

    take(run_dir) locks the folder when it exists (make=True: makes it first); rank != 0 of a job never locks."""

    def __init__(self, world=None):
        self.main = world is None or world.is_main
        self.fd = None

    def take(self, run_dir, make=False):
        if not self.main or self.fd is not None or fcntl is None:
            return
        if not Path(run_dir).is_dir():
            if not make:
                return
            try:
                Path(run_dir).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise TrainError(f"--run-dir {run_dir}: cannot make the folder ({e.strerror})") from None
        self.fd = acquire(run_dir)

    def release(self):
        if self.fd is not None:
            os.close(self.fd)   # closing the only descriptor of the open file releases the flock
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def acquire(run_dir):
    """A descriptor of RUN_DIR/fit.lock with its exclusive lock held and this process's details written in it;
    TrainError naming the folder and the holder when another process holds it (nothing written then)."""
    path = lock_path(run_dir)
    try:   # no O_TRUNC: a process that does not get the lock must leave the holder's details as they are
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        raise TrainError(f"--run-dir {run_dir}: cannot open its lock file {path} ({e.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = read_holder(fd)
        os.close(fd)
        raise TrainError(busy_message(run_dir, holder)) from None
    except OSError as e:   # e.g. ENOLCK: a network file system without a lock service
        os.close(fd)
        raise TrainError(f"--run-dir {run_dir}: cannot lock {path} ({e.strerror}); fit locks its run folder so that "
                         f"no second fit writes into it: use a folder on a local disk") from None
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
          "command": " ".join(sys.argv)}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)   # one write: a reader sees the whole line or nothing
    return fd


def read_holder(fd, wait=None):
    """The holder's details from the lock file (a dict), or None when it has written none within `wait` seconds (it
    writes them right after it takes the lock)."""
    # polls counted, not a clock read: a clock that stands still must not make this wait forever
    for _ in range(max(1, math.ceil((HOLDER_WAIT if wait is None else wait) / POLL))):
        text = os.pread(fd, 65536, 0).decode("utf-8", "replace")
        if text.endswith("\n"):
            try:
                holder = json.loads(text)
                if isinstance(holder, dict):
                    return holder
            except json.JSONDecodeError:
                pass
        time.sleep(POLL)
    return None


def busy_message(run_dir, holder):
    who = "another process" if holder is None else (
        f"process {holder.get('pid', '?')} on {holder.get('host', '?')}, started {holder.get('started', '?')}")
    return (f"--run-dir {run_dir}: another fit is writing this run folder ({who}); wait for it to end, stop it "
            f"(touch {Path(run_dir) / 'STOP'}), or give another --run-dir")
