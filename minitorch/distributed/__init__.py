"""Data-parallel training across processes: MPI (mpi4py) on CPUs, NCCL (through CuPy) on GPUs.

    world = distributed.init(device)              # rank, size and collectives of this job (size 1 without MPI)
    flat = nn.utils.FlatParameters(model)          # one gradient buffer: one collective call (optional)
    sync = distributed.GradientSync(flat, world)  # (or model.parameters(): one call per tensor)
    ... loss.backward(); sync() ...               # every rank now holds the sum of all ranks' gradients
"""
from .gradient_sync import GradientSync, broadcast_parameters
from .world import DistributedError, MPIUnavailable, MPIWorld, World, init, launcher_size

__all__ = ["World", "MPIWorld", "DistributedError", "MPIUnavailable", "init", "launcher_size", "GradientSync",
           "broadcast_parameters"]
