"""The processes of one job: this one's rank, how many there are, and the collectives they run together.

MPI starts the processes (`mpirun -n N ...`) and carries Python objects and NumPy arrays; on GPUs the arrays go
through NCCL instead (see nccl.py), one GPU per process. A job of one process needs neither library: `World` is that
job, and each of its collectives returns its input.
"""
import os
import sys
import time

from .. import backend


class DistributedError(RuntimeError):
    """The job cannot run as asked (no mpi4py, too few GPUs, ...); the message says why and what to do."""


class MPIUnavailable(DistributedError):
    """mpi4py, or the MPI library it loads, is not installed; the message names which."""


class World:
    """One process on its own: rank 0 of 1; every collective is the identity."""

    rank, size = 0, 1

    @property
    def is_main(self):
        """True on the process that writes files and prints (rank 0)."""
        return self.rank == 0

    def allreduce_sum_(self, array):
        """Replace array (NumPy or CuPy) by its elementwise sum over all ranks, in place; returns it."""
        return array

    def broadcast_(self, array, root=0):
        """Overwrite array with root's, in place; returns it."""
        return array

    def broadcast_object(self, obj, root=0):
        """root's obj, on every rank (any picklable value)."""
        return obj

    def allgather_object(self, obj):
        """[obj of rank 0, obj of rank 1, ...], on every rank."""
        return [obj]

    def any(self, flag):
        """True on every rank when flag is true on at least one."""
        return bool(flag)

    def barrier(self):
        """Wait until every rank has come here."""

    def abort(self, status=1):
        """Stop the whole job at once (every rank) with this exit status."""
        sys.exit(status)

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"


class MPIWorld(World):
    """The ranks of an MPI job (mpi4py's COMM_WORLD); arrays on a GPU are reduced by NCCL."""

    def __init__(self, comm, device="cpu"):
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.device = device
        self.nccl = None
        if device != "cpu":
            self._use_local_gpu()
            if self.size > 1:
                from .nccl import NCCLCommunicator
                self.nccl = NCCLCommunicator(self)

    def _use_local_gpu(self):
        """Give each rank on a node its own GPU: its rank among the node's processes picks one of the GPUs it sees
        (a launcher that shows each process a single GPU, through CUDA_VISIBLE_DEVICES, works too)."""
        from mpi4py import MPI
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        n_gpus = backend.gpu_count()
        backend.use_gpu(local.Get_rank() % n_gpus)
        buses = local.allgather(backend.gpu_bus_id())
        if len(set(buses)) < len(buses):   # NCCL cannot put two ranks on one GPU
            raise DistributedError(f"{len(buses)} processes on this node share {len(set(buses))} "
                                   f"GPU{'s' if len(set(buses)) != 1 else ''}; NCCL needs one process per GPU: start "
                                   f"{len(set(buses))} on this node")

    def _mpi_buffer(self, array):
        if backend.device_of(array) != "cpu":
            raise DistributedError("MPI carries NumPy arrays here; GPU arrays go through NCCL (device cuda)")
        return array

    def allreduce_sum_(self, array):
        if self.size == 1:
            return array
        if self.nccl is not None and backend.device_of(array) != "cpu":
            self.nccl.allreduce_sum_(array)
            return array
        from mpi4py import MPI
        self.comm.Allreduce(MPI.IN_PLACE, self._mpi_buffer(array), op=MPI.SUM)
        return array

    def broadcast_(self, array, root=0):
        if self.size == 1:
            return array
        if self.nccl is not None and backend.device_of(array) != "cpu":
            self.nccl.broadcast_(array, root)
            return array
        self.comm.Bcast(self._mpi_buffer(array), root=root)
        return array

    def broadcast_object(self, obj, root=0):
        return self.comm.bcast(obj, root=root)

    def allgather_object(self, obj):
        return self.comm.allgather(obj)

    def any(self, flag):
        from mpi4py import MPI
        return bool(self.comm.allreduce(int(bool(flag)), op=MPI.MAX))

    def barrier(self, poll_s=0.002):
        # MPI's own barrier spins, so a rank that waits (while rank 0 trains the tokenizer, or runs a benchmark
        # alone) would take a core from the one it waits for; this one sleeps between looks
        request = self.comm.Ibarrier()
        while not request.Test():
            time.sleep(poll_s)

    def abort(self, status=1):
        sys.stdout.flush()
        sys.stderr.flush()
        self.comm.Abort(status)


def launcher_size():
    """The number of processes an MPI launcher (Open MPI, MPICH, Intel MPI, Slurm's PMI) started alongside this one,
    read from its environment without starting MPI; None when no launcher started this process."""
    for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return None


def init(device="cpu"):
    """The world of this process: an MPIWorld (mpi4py's COMM_WORLD; size 1 when not started by a launcher).

    MPIUnavailable when mpi4py or the MPI library it needs is missing, naming which.
    """
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise MPIUnavailable(f"mpi4py is not installed ({e}); it needs an MPI library too (Open MPI, MPICH)") \
            from None
    except RuntimeError as e:  # mpi4py found no MPI library to load
        raise MPIUnavailable(f"mpi4py could not load an MPI library ({e})") from None
    return MPIWorld(MPI.COMM_WORLD, device)
