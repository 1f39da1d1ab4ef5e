"""Running out of memory, in any phase of a command, as one line naming the phase.

Python's MemoryError is caught where it happens (`during`). The C and C++ libraries do worse when an allocation
fails: SentencePiece's trainer aborts the process (`terminate called ...`, std::bad_alloc) or cannot start its
threads, and OpenBLAS exits after printing "Memory allocation still failed". Under an address-space limit (ulimit -v),
where that is likely, what may do it runs in a child process first (`isolated`), whose death the parent reports.
"""
import errno
import faulthandler
import os
import pickle
import signal
import tempfile
from contextlib import contextmanager

from .errors import TrainError

try:
    import resource
except ImportError:   # Windows: no address-space limit to name
    resource = None

# what the libraries say when an allocation, or the stack of a new thread, was refused
MEMORY_WORDS = ("bad_alloc", "Cannot allocate memory", "Resource temporarily unavailable", "can't start new thread",
                "failed to map segment", "Memory allocation still failed")


class OutOfMemory(TrainError):
    """Out of memory during a phase of a command (exit status 1)."""


def limit_text():
    """' (ulimit -v limits this process to N MB)' when a limit is set, else ''."""
    if resource is None:
        return ""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return "" if soft == resource.RLIM_INFINITY else f" (ulimit -v limits this process to {soft >> 20} MB)"


def out_of_memory(phase, hint="", detail=""):
    """The OutOfMemory of a phase: what ran out, the limit if one is set, and what the user can change."""
    return OutOfMemory(f"out of memory during {phase}{limit_text()}" + (f" [{detail}]" if detail else "")
                       + (f"; {hint}" if hint else ""))


def is_memory_error(e):
    """Whether an exception says that memory (or a thread's stack) could not be had."""
    return (isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno in (errno.ENOMEM, errno.EAGAIN))
            or (isinstance(e, (RuntimeError, ImportError, OSError)) and any(w in str(e) for w in MEMORY_WORDS)))


@contextmanager
def during(phase, hint=""):
    """Turn running out of memory inside the block into OutOfMemory naming the phase (and `hint`: what needs less)."""
    try:
        yield
    except Exception as e:
        if isinstance(e, TrainError) or not is_memory_error(e):
            raise
        raise out_of_memory(phase, hint, f"{type(e).__name__}: {e}") from None


def in_child(phase, hint, function, *args):
    """function(*args) run in a forked child process, its result (pickled) sent back: a library that aborts or
    exits there takes only the child with it, and that is OutOfMemory of the phase when the child said something
    of memory or was killed (SIGKILL: the kernel's OOM killer), else TrainError naming how it ended. An exception
    in the child is raised here as it was. Where there is no fork (Windows), function runs here."""
    if not hasattr(os, "fork"):
        return function(*args)
    with tempfile.TemporaryFile() as stderr:
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            os.close(read)
            os.close(write)
            raise out_of_memory(phase, hint, f"cannot start a process: {e.strerror}") from None
        if pid == 0:   # the child: its stderr (a library's last words) kept for the parent, not shown
            try:
                os.close(read)
                os.dup2(stderr.fileno(), 2)
                faulthandler.disable()   # (where it is on, it writes an abort's report to the parent's stderr)
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(_outcome(phase, function, args))
            finally:   # whatever happens, the child never returns into the parent's code
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            message = pipe.read()
        _, status = os.waitpid(pid, 0)
        stderr.seek(0)
        said = stderr.read().decode(errors="replace").strip()
    if message:
        outcome, value = pickle.loads(message)
        if outcome == "value":
            return value
        raise value
    last = said.splitlines()[-1] if said else ""
    how = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exit status {os.waitstatus_to_exitcode(status)}") + (f": {last}" if last else "")
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if killed or any(w in said for w in MEMORY_WORDS) or limit_text():
        raise out_of_memory(phase, hint, how)
    raise TrainError(f"{phase} failed: its process ended with {how}")


def isolated(phase, hint, function, *args):
    """function(*args) in a child process (in_child) where an address-space limit (ulimit -v) makes a refused
    allocation likely; else here, without the cost of a fork (and without forking an MPI rank)."""
    return in_child(phase, hint, function, *args) if limit_text() else function(*args)


def probe(phase, hint, function):
    """Under an address-space limit, run function() first in a child (in_child), where a refused allocation cannot end
    this process; the caller then runs it here. Without a limit, nothing (the caller's own call is the only one)."""
    if limit_text():
        in_child(phase, hint, function)


def _outcome(phase, function, args):
    """("value", result) or ("error", the exception), pickled: what a child sends back."""
    try:
        return pickle.dumps(("value", function(*args)))
    except BaseException as e:   # noqa: BLE001 (every exception goes back to the parent)
        try:
            return pickle.dumps(("error", e))
        except Exception:   # an exception that does not pickle: its words
            return pickle.dumps(("error", TrainError(f"{phase} failed: {type(e).__name__}: {e}")))


def _blas_product():
    import numpy as np
    a = np.ones((64, 64))
    return float((a @ a)[0, 0])


def starting_out_of_memory(e):
    """Whether an exception while loading the libraries (NumPy's, SentencePiece's) is for want of memory: one that
    says so, or any under an address-space limit (where a refused allocation surfaces as odd errors)."""
    return is_memory_error(e) or bool(limit_text())


def blas_ready():
    """Make OpenBLAS allocate its buffers now, while little memory is in use; under a limit first in a child, as
    OpenBLAS exits the process when it cannot (OutOfMemory here instead)."""
    probe("start-up (OpenBLAS's buffers)", "", _blas_product)
    _blas_product()
