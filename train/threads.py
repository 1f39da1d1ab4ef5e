"""How many BLAS threads a command uses: the preset's measured choice, an environment variable, or --threads N.

OpenBLAS starts one thread per core by default, and its threads spin while they wait for work. On a machine where
another process uses a core, those spinning threads fight it for the core and every matrix product waits for the
slowest of them: steps of the demo model took about 6 times as long with 2 threads as with 1 on this project's 2-core
machine with the other core busy. The measurements behind PRESET_THREADS are in the README (section Speed).
"""
import os


# BLAS threads per process for each preset, from `python -m train bench --preset P --threads 1|2` on a 2-core CPU,
# quiet and with the other core busy: for demo, tiny and small a second thread gained 0-20% on the quiet machine and
# made steps 2-6 times slower as soon as another process ran, so one thread is the safe choice (base, meant for a GPU,
# was not measured on the CPU: it takes small's choice).
PRESET_THREADS = {"demo": 1, "tiny": 1, "small": 1, "base": 1}
ENVIRONMENT = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")   # read by the BLAS libraries at start
LOCAL_SIZE = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")   # ranks on this machine


def cores(local_ranks=1):
    """The cores this process may use: those it is bound to (an MPI launcher's binding), else its share of the
    machine's cores when local_ranks processes run on it."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:   # macOS, Windows: no affinity call
        usable = os.cpu_count() or 1
    if usable < (os.cpu_count() or usable):   # bound by the launcher: the binding is already this rank's share
        return max(usable, 1)
    return max(usable // max(local_ranks, 1), 1)


def local_ranks(world=None):
    """The processes of this job on this machine (1 without a job): from MPI when it runs, else the launcher's
    environment, else the job's size."""
    if world is None or world.size == 1:
        return 1
    comm = getattr(world, "comm", None)
    if comm is not None:
        from mpi4py import MPI
        return comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
    for key in LOCAL_SIZE:
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return world.size


def choose(preset, requested=None, world=None, environ=None):
    """(threads, why): --threads when given, else a thread variable of the environment, else the preset's measured
    choice; never more than this process's share of the cores (except when asked for by --threads)."""
    environ = os.environ if environ is None else environ
    if requested is not None:
        return requested, "--threads"
    for key in ENVIRONMENT:
        value = environ.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value), f"{key}={value}"
    n_ranks = local_ranks(world)
    share = cores(n_ranks)
    threads = min(PRESET_THREADS.get(preset, 1), share)
    ranks = f", {n_ranks} processes on {os.cpu_count()} cores" if n_ranks > 1 else ""
    return threads, f"the {preset} preset's choice{ranks}"


def apply(threads):
    """Limit the BLAS libraries loaded in this process (NumPy's) to `threads` threads; returns {library: threads} as
    they now stand."""
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")
    return {info["internal_api"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def setup(preset, requested=None, world=None):
    """Choose and apply the BLAS threads of a command: a record for config.json and the line that reports it."""
    threads, why = choose(preset, requested, world)
    libraries = apply(threads)
    record = {"threads": threads, "chosen_by": why, "libraries": libraries,
              "processes": 1 if world is None else world.size}
    per = " per process" if record["processes"] > 1 else ""
    how = f"--threads {threads}" if why == "--threads" else f"{why}; --threads N to change"
    return record, f"BLAS threads: {threads}{per}, on a machine of {os.cpu_count()} cores ({how})"
