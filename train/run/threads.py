"""How many BLAS threads a command uses: --threads N, an environment variable, the run's recorded choice (fit
--resume), or the count measured at start; and, in a run, the check after its first steps that more threads than one
are faster.

The right count depends on the machine and on what else runs on it. OpenBLAS starts one thread per core by default,
and its threads spin while they wait for work: where another process uses a core, those spinning threads fight it for
the core and every matrix product waits for the slowest of them (steps of the demo model took about 6 times as long
with 2 threads as with 1 on a 2-core machine with the other core busy; a resumed tiny run there, measured anew on a
1 ms slice, chose 2 threads and trained 7 times slower), while on a quiet 16-core workstation one thread leaves most
of the CPU idle. So a command times the matrix products of a training step of its preset (an encoder and a decoder
layer and the output projection, forward and backward, on the whole batch of the tiny preset; bigger presets' rows
cut to STEP_FLOPS) at 1, 2, 4, ... threads up to this process's share of the cores, REPEATS times, the counts taking
turns so that a burst of load from elsewhere falls on all of them, and compares medians: more threads are taken only
for a clear gain (GAIN) over fewer. A resumed run keeps the count that its config.json records, and a run on more
than one measured thread checks the count on its own steps (StepCheck): after WARMUP steps it takes turns between
that count and one thread for PAIRS steps each, and falls back to one thread, saying so, when the count is not faster
per token. The README (section Speed) says what it chose where.
"""
import functools
import os
import statistics
import time

from .config import write_config

ENVIRONMENT = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")   # read by the BLAS libraries at start
LOCAL_SIZE = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")   # ranks on this machine
GAIN = 0.15        # more threads must take at most 85% of the time of fewer (medians) to be chosen
STEP_FLOPS = 4e9   # the timed work at most (a whole step of the tiny preset: 2.6e9); bigger presets' rows are cut
REPEATS = 5        # each count is timed this many times (the counts taking turns); its time is their median
GIVE_UP = 1.5      # stop trying more threads once a count is this many times slower than the fastest so far
WARMUP = 2         # a run's first steps, left out of its check (memory first touched, caches cold)
PAIRS = 4          # the check times this many steps at the chosen count and as many at one thread, in turns
STILL_CLOCK = "not measured: the clock did not advance"   # a timing of 0 s (a clock that stands still) compares none
MEASURED = "measured on a training step's matrix products"   # chosen_by of a measured count (older runs: "measured
                                                                # on the P preset's matrix products")


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


def best_count(timings, gain=GAIN):
    """The count to take from {threads: seconds} (medians): the fewest threads, unless more are clearly faster, each
    larger count taken only when it needs at most (1 - gain) of the time of the count taken so far."""
    best = min(timings)
    for n in sorted(timings):
        if timings[n] <= timings[best] * (1 - gain):
            best = n
    return best


def step_products(preset):
    """The (rows, inner, columns) shapes of the matrix products of a training step of the preset's Transformer: an
    encoder layer's attention projections (4) and feed-forward network (2), a decoder layer's (8: self and cross
    attention, and 2), the output projection, each with its backward's two products (the gradients of both operands).
    Further layers repeat these shapes, and the attention scores' products (small, batched) are left out. Rows: the
    batch's tokens (a whole step of the tiny preset), cut so that the whole is at most STEP_FLOPS."""
    from .presets import PRESETS
    p = PRESETS[preset]
    d, d_ff = p.model["d_model"], p.model["d_ff"]
    weights = [(d, d)] * 4 + [(d, d_ff), (d_ff, d)] + [(d, d)] * 8 + [(d, d_ff), (d_ff, d)] + [(d, p.vocab_size)]
    flops_per_row = sum(3 * 2 * k * n for k, n in weights)   # forward and backward: 3 products of 2 k n each
    rows = max(1, min(p.batch_tokens, int(STEP_FLOPS // flops_per_row)))
    return [shape for k, n in weights for shape in ((rows, k, n), (rows, n, k), (k, rows, n))]


@functools.lru_cache(maxsize=1)
def operands(shapes):
    """A pair of float32 operands for each distinct shape of a tuple of shapes (kept while a measurement lasts)."""
    import numpy as np
    return {(m, k, n): (np.full((m, k), 0.5, np.float32), np.full((k, n), 0.25, np.float32))
            for m, k, n in set(shapes)}


def time_products(shapes, threads):
    """Seconds for one run of the products (float32) at a thread count, after a product that wakes the threads."""
    pairs = operands(tuple(shapes))
    apply(threads)
    a, b = pairs[shapes[0]]
    a @ b
    start = time.perf_counter()
    for shape in shapes:
        a, b = pairs[shape]
        a @ b
    return time.perf_counter() - start


def measure(shapes, share, timer=None, repeats=REPEATS):
    """{threads: median seconds} for the candidate counts up to share: a first round in order, which stops once more
    threads only got slower, then repeats - 1 rounds of the counts left, taking turns."""
    timer = timer or time_products
    times = {}
    for n in candidates(share):
        times[n] = [timer(shapes, n)]
        if times[n][0] > GIVE_UP * min(t[0] for t in times.values()):
            break
    for _ in range(repeats - 1):
        for n in times:
            times[n].append(timer(shapes, n))
    operands.cache_clear()   # the operands' memory back for the run
    return {n: statistics.median(t) for n, t in times.items()}


def usable_record(recorded, processes, share):
    """The run's recorded choice when this command may keep it: a count that fits this process's share of the cores,
    made for as many processes; else None."""
    if not isinstance(recorded, dict) or recorded.get("processes", 1) != processes:
        return None
    n = recorded.get("threads")
    # (a record edited by hand without its reason is measured again: the line that keeps it names the reason)
    return recorded if isinstance(n, int) and 0 < n <= share and isinstance(recorded.get("chosen_by"), str) else None


def choose(preset, requested=None, world=None, environ=None, timer=None, recorded=None):
    """(threads, why, timings): --threads when given, else a thread variable of the environment, else the run's
    recorded choice (a resumed run), else the count measured on a whole step's products of the preset (timings:
    {threads: median seconds}, empty when none were measured)."""
    environ = os.environ if environ is None else environ
    if requested is not None:
        return requested, "--threads", {}
    for key in ENVIRONMENT:
        value = environ.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value), f"{key}={value}", {}
    n_ranks = local_ranks(world)
    share = cores(n_ranks)
    kept = usable_record(recorded, 1 if world is None else world.size, share)
    if kept is not None:
        return kept["threads"], "kept", {}
    ranks = f", {n_ranks} processes on {os.cpu_count()} cores" if n_ranks > 1 else ""
    if share == 1:
        return 1, f"one core for this process{ranks}", {}
    timings = measure(step_products(preset), share, timer)
    if min(timings.values()) <= 0:   # a clock that stood still (or went back) measured nothing: no count is better
        return 1, f"{STILL_CLOCK} while the matrix products ran; one thread{ranks}", {}
    return best_count(timings), f"{MEASURED} of the {preset} preset (median of {REPEATS}){ranks}", timings


def apply(threads):
    """Limit the BLAS libraries loaded in this process (NumPy's) to `threads` threads; returns {library: threads} as
    they now stand."""
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")
    return {info["internal_api"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def timings_text(timings):
    return ", ".join(f"{n} {'thread' if n == 1 else 'threads'} {1e3 * s:.1f} ms" for n, s in sorted(timings.items()))


def setup(preset, requested=None, world=None, timer=None, recorded=None):
    """Choose and apply the BLAS threads of a command: a record for config.json and the line that reports it.
    recorded: the run's record (fit --resume), kept when it fits this machine and job."""
    threads, why, timings = choose(preset, requested, world, timer=timer, recorded=recorded)
    libraries = apply(threads)
    per = " per process" if world is not None and world.size > 1 else ""
    start = f"BLAS threads: {threads}{per}, on a machine of {os.cpu_count()} cores"
    if why == "kept":
        return dict(recorded, libraries=libraries), (f"{start} (the run's recorded choice: {recorded['chosen_by']}; "
                                                     f"--threads N to change)")
    record = {"threads": threads, "chosen_by": why, "libraries": libraries,
              "processes": 1 if world is None else world.size}
    if timings:
        record["timings_ms"] = {str(n): round(1e3 * s, 3) for n, s in sorted(timings.items())}
    measured = f": {timings_text(timings)}" if timings else ""
    how = f"--threads {threads}" if why == "--threads" else f"{why}{measured}; --threads N to change"
    return record, f"{start} ({how})"


class StepCheck:
    """A run's check of a measured choice of more than one thread on its own steps (on the CPU): after WARMUP steps
    it takes turns, a step at one thread and a step at the chosen count, PAIRS times each, then compares the
    medians of seconds per token; when the chosen count is not faster, the rest of the run takes one thread and
    says so in one line. Either way config.json records the outcome (a resumed run keeps it). In a job of several
    ranks, rank 0's verdict holds for all (their steps take the same time: each waits for the others' gradients)."""

    def __init__(self, config, run_dir, world=None, device="cpu", apply=apply, say=None):
        self.config, self.run_dir, self.world, self.apply = config, run_dir, world, apply
        record = config.blas_threads or {}
        self.n = record.get("threads", 1)
        self.active = (device == "cpu" and isinstance(self.n, int) and self.n > 1
                       and str(record.get("chosen_by", "")).startswith("measured"))
        self.steps, self.current, self.per_token = 0, self.n, {self.n: [], 1: []}
        self.say = say

    def after_step(self, seconds, tokens):
        """Note one applied step (its seconds and tokens) and set the count of the next one."""
        if not self.active:
            return
        self.steps += 1
        if self.steps > WARMUP:
            self.per_token[self.current].append(seconds / max(tokens, 1))
        if min(len(t) for t in self.per_token.values()) < PAIRS:
            if self.steps >= WARMUP:
                self.current = 1 if self.current == self.n else self.n
                self.apply(self.current)
            return
        self.active = False
        self.decide()

    def decide(self):
        median = {n: statistics.median(t) for n, t in self.per_token.items()}
        # None: no verdict, where steps took 0 s (a clock that stood still)
        slower = None if min(median.values()) <= 0 else median[self.n] >= median[1]
        world_size = 1 if self.world is None else self.world.size
        if world_size > 1:
            slower = self.world.allgather_object(slower)[0]
        if slower is None:
            return self.unjudged()
        speed = {str(n): round(1 / max(s, 1e-12)) for n, s in sorted(median.items())}
        record, self.current = self.config.blas_threads, 1 if slower else self.n
        steps = f"steps {WARMUP + 1}-{self.steps} of this command"
        checked = {"steps": steps, "tokens_per_s": speed}
        if slower:
            record = {"threads": 1, "chosen_by": f"fell back from {self.n} threads: not faster than one in "
                                                 f"{steps}", "libraries": self.apply(1),
                      "processes": record.get("processes", world_size), "before": record, "checked": checked}
        else:
            self.apply(self.n)
            record = dict(record, checked=checked)
        self.config.blas_threads = record
        if self.world is None or self.world.is_main:
            write_config(self.run_dir, self.config)
            if slower:
                self.report(speed)

    def unjudged(self):
        """Steps timed at 0 s (a clock that stood still): no verdict; the chosen count stays, and config.json and
        one line say why."""
        self.apply(self.n)
        self.current = self.n
        steps = f"steps {WARMUP + 1}-{self.steps} of this command"
        self.config.blas_threads = dict(self.config.blas_threads, checked={"steps": steps, "tokens_per_s": None})
        if self.world is None or self.world.is_main:
            write_config(self.run_dir, self.config)
            self.say_line(f"BLAS threads: {STILL_CLOCK} in {steps}, so {self.n} threads were not compared with one; "
                          f"keeping {self.n} (--threads N to choose)")

    def report(self, speed):
        timings = self.config.blas_threads["before"].get("timings_ms", {})
        one, chosen = timings.get("1"), timings.get(str(self.n))
        expected = (f" (its start-up measurement expected {one / chosen:.2f} times one thread's speed)"
                    if isinstance(one, (int, float)) and isinstance(chosen, (int, float)) and chosen > 0 else "")
        line = (f"BLAS threads: {self.n} threads trained at {speed[str(self.n)]:,} tokens/s against {speed['1']:,} "
                f"on one thread in steps {WARMUP + 1}-{self.steps} of this command{expected}; falling back to 1 "
                f"thread for the rest of the run (--threads N to choose)")
        self.say_line(line)

    def say_line(self, line):
        if self.say is not None:
            self.say(line)
        else:
            from tqdm import tqdm
            tqdm.write(line)   # between progress-bar updates, not through them
