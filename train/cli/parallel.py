"""The CLI side of data-parallel jobs (`mpirun -n N python3 -m train fit ... --distributed`).

Every rank runs the same command on the same data; rank 0 alone writes files and prints (the other ranks' stdout goes
to /dev/null), and an error on any rank stops the whole job through MPI_Abort, so that no rank waits forever in a
collective for a rank that has gone.
"""
import contextlib
import os
import sys

from minitorch import distributed

from .errors import TrainError, error_message
from .prog import PROG


def add_distributed_argument(parser, what="training"):
    parser.add_argument("--distributed", action="store_true",
                        help=f"data-parallel {what} across the processes of an MPI job, e.g. `mpirun -n 2 {PROG} "
                             f"... --distributed` (MPI on CPUs, NCCL on GPUs; needs mpi4py: pip install -e "
                             f"'.[dist]'); with one process it changes nothing")


def init_world(enabled, device):
    """The job's World: one process unless --distributed; TrainError when MPI (or NCCL) cannot be set up."""
    if not enabled:
        n = distributed.launcher_size()
        if n and n > 1:   # N copies of a one-process run would each train alone and write the same files
            raise TrainError(f"started by an MPI launcher as one of {n} processes, but without --distributed; add "
                             f"--distributed to train together, or start one process")
        return distributed.World()
    try:
        world = distributed.init(device)
    except distributed.MPIUnavailable as e:
        raise TrainError(f"--distributed needs mpi4py and an MPI library: {e}; install them with pip install -e "
                         f"'.[dist]' (or your system's Open MPI, e.g. apt-get install openmpi-bin, plus pip install "
                         f"mpi4py)") from None
    except (distributed.DistributedError, RuntimeError) as e:
        raise TrainError(f"--distributed on {device}: {e}") from None
    if not world.is_main:
        sys.stdout = open(os.devnull, "w")   # rank 0 speaks for the job
    return world


def share(items, world):
    """This rank's share of a list: every size-th item from its rank on (similar lengths when items are sorted)."""
    return items[world.rank::world.size]


def gather_shares(mine, world, n):
    """The inverse of share() for lists of results: every rank's share, back in the original order of n items."""
    out = [None] * n
    for rank, part in enumerate(world.allgather_object(mine)):
        out[rank::world.size] = part
    return out


def main_first(world, make):
    """make() on rank 0, then on the other ranks, which then find what rank 0 made (a corpus, a download)."""
    result = make() if world.is_main else None
    world.barrier()
    return result if world.is_main else make()


@contextlib.contextmanager
def stop_job_on_error(world, command):
    """Run the body; when it fails on one rank of a job of several, print why (naming the rank) and abort every
    rank, instead of leaving the others blocked in their next collective."""
    if world.size == 1:
        yield
        return
    try:
        yield
    except BaseException as e:   # noqa: B036 - any failure, Ctrl-C included, must take the whole job down
        message, status = error_message(command, e)
        if isinstance(e, SystemExit):
            if not e.code:
                raise
            message, status = f"exited with status {e.code}", e.code if isinstance(e.code, int) else 1
        if message is None:   # an unexpected exception (a bug): its traceback first, as Python would print it
            import traceback
            traceback.print_exception(e, file=sys.__stderr__)
            message, status = f"{type(e).__name__}: {e}", 1
        print(f"{PROG} {command}: error on rank {world.rank} of {world.size}: {message} (stopping all "
              f"ranks)", file=sys.__stderr__, flush=True)
        world.abort(status)
