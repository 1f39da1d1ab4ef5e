"""How many BLAS threads a command uses: --threads N, an environment variable, or the count measured at start.

The right count depends on the machine and on what else runs on it. OpenBLAS starts one thread per core by default,
and its threads spin while they wait for work: where another process uses a core, those spinning threads fight it for
the core and every matrix product waits for the slowest of them (steps of the demo model took about 6 times as long
with 2 threads as with 1 on a 2-core machine with the other core busy), while on a quiet 16-core workstation one
thread leaves most of the CPU idle. So each command times a few of its preset's own matrix products (the
feed-forward layer's two and the output projection, on a slice of a batch) at 1, 2, 4, ... threads up to this
process's share of the cores, and takes the fastest; a count within MARGIN of the fastest that uses fewer threads
wins, since fewer threads leave more for everything else. The README (section Speed) says what it chose where.
"""
import os
import time

ENVIRONMENT = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")   # read by the BLAS libraries at start
LOCAL_SIZE = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")   # ranks on this machine
MARGIN = 0.10      # a count within 10% of the fastest time counts as a tie: the fewest threads of the tied win
ROWS = 256         # tokens of the timed slice of a batch (at most the preset's batch_tokens)
REPEATS = 2        # each count's time is the fastest of this many runs of the products, after one untimed run
GIVE_UP = 1.5      # stop trying more threads once a count is this many times slower than the fastest so far


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


def candidates(share):
    """The thread counts tried: 1, 2, 4, ... below share, and share itself."""
    counts, n = [], 1
    while n < share:
        counts.append(n)
        n *= 2
    return counts + [share]


def fastest(timings, margin=MARGIN):
    """The fewest threads whose time is within margin of the fastest: timings is {threads: seconds}."""
    best = min(timings.values())
    return min(n for n, s in timings.items() if s <= best * (1 + margin))


def preset_products(preset):
    """The (rows, inner, columns) shapes of the timed products: a slice of a batch through the preset's feed-forward
    layer (d_model -> d_ff -> d_model) and its output projection (d_model -> vocabulary)."""
    from .presets import PRESETS
    p = PRESETS[preset]
    rows = min(ROWS, p.batch_tokens)
    d_model, d_ff = p.model["d_model"], p.model["d_ff"]
    return [(rows, d_model, d_ff), (rows, d_ff, d_model), (rows, d_model, p.vocab_size)]


def time_products(shapes, threads):
    """Seconds for one run of the products (float32) at a thread count: the fastest of REPEATS, after a warm-up."""
    import numpy as np
    pairs = [(np.full((m, k), 0.5, np.float32), np.full((k, n), 0.25, np.float32)) for m, k, n in shapes]
    apply(threads)
    best = float("inf")
    for rep in range(REPEATS + 1):
        start = time.perf_counter()
        for a, b in pairs:
            a @ b
        if rep:   # the first run wakes the threads up
            best = min(best, time.perf_counter() - start)
    return best


def measure(shapes, share, timer=time_products):
    """{threads: seconds} for the candidate counts up to share; stops early once more threads only got slower."""
    timings = {}
    for n in candidates(share):
        timings[n] = timer(shapes, n)
        if timings[n] > GIVE_UP * min(timings.values()):
            break
    return timings


def choose(preset, requested=None, world=None, environ=None, timer=time_products):
    """(threads, why, timings): --threads when given, else a thread variable of the environment, else the fastest
    count measured on the preset's products (timings: {threads: seconds}, empty when none were measured)."""
    environ = os.environ if environ is None else environ
    if requested is not None:
        return requested, "--threads", {}
    for key in ENVIRONMENT:
        value = environ.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value), f"{key}={value}", {}
    n_ranks = local_ranks(world)
    share = cores(n_ranks)
    ranks = f", {n_ranks} processes on {os.cpu_count()} cores" if n_ranks > 1 else ""
    if share == 1:
        return 1, f"one core for this process{ranks}", {}
    timings = measure(preset_products(preset), share, timer)
    return fastest(timings), f"measured on the {preset} preset's matrix products{ranks}", timings


def apply(threads):
    """Limit the BLAS libraries loaded in this process (NumPy's) to `threads` threads; returns {library: threads} as
    they now stand."""
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")
    return {info["internal_api"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def timings_text(timings):
    return ", ".join(f"{n} {'thread' if n == 1 else 'threads'} {1e3 * s:.1f} ms" for n, s in sorted(timings.items()))


def setup(preset, requested=None, world=None, timer=time_products):
    """Choose and apply the BLAS threads of a command: a record for config.json and the line that reports it."""
    threads, why, timings = choose(preset, requested, world, timer=timer)
    libraries = apply(threads)
    record = {"threads": threads, "chosen_by": why, "libraries": libraries,
              "processes": 1 if world is None else world.size}
    if timings:
        record["timings_ms"] = {str(n): round(1e3 * s, 3) for n, s in sorted(timings.items())}
    per = " per process" if record["processes"] > 1 else ""
    measured = f": {timings_text(timings)}" if timings else ""
    how = f"--threads {threads}" if why == "--threads" else f"{why}{measured}; --threads N to change"
    return record, f"BLAS threads: {threads}{per}, on a machine of {os.cpu_count()} cores ({how})"
