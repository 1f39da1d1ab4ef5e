"""NCCL on CuPy arrays: the GPU collectives of an MPI job (MPI hands NCCL its unique id, then NCCL moves the data
GPU to GPU, over NVLink or the network, without going through the host)."""
from .. import backend

_DTYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16", "int64": "NCCL_INT64",
           "int32": "NCCL_INT32"}


class NCCLCommunicator:
    """One NCCL communicator over the ranks of `world` (an MPIWorld), each on its own current GPU."""

    def __init__(self, world):
        self.nccl = backend.nccl()
        uid = self.nccl.get_unique_id() if world.rank == 0 else None
        uid = world.broadcast_object(uid, root=0)
        self.comm = self.nccl.NcclCommunicator(world.size, uid, world.rank)

    def _dtype(self, array):
        name = _DTYPES.get(str(array.dtype))
        if name is None:
            raise TypeError(f"NCCL: no reduction for dtype {array.dtype}")
        return getattr(self.nccl, name)

    @staticmethod
    def _stream():
        return backend.xp_of_device("cuda").cuda.get_current_stream().ptr

    def allreduce_sum_(self, array):
        """In place: array <- its sum over the ranks (array: contiguous CuPy array)."""
        ptr = array.data.ptr
        self.comm.allReduce(ptr, ptr, array.size, self._dtype(array), self.nccl.NCCL_SUM, self._stream())

    def broadcast_(self, array, root=0):
        """In place: array <- root's array."""
        self.comm.bcast(array.data.ptr, array.size, self._dtype(array), root, self._stream())
