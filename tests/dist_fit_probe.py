"""`python -m train fit` with probes, for tests/training/test_distributed.py to run under mpirun.

    python dist_fit_probe.py check-identical FIT-ARGS...   after every step, all ranks must hold bit-identical
                                                          weights (the job fails if not); rank 0 prints the count
    python dist_fit_probe.py fail RANK STEP FIT-ARGS...    rank RANK raises an error after step STEP
    python dist_fit_probe.py kill RANK STEP FIT-ARGS...    rank RANK is killed (SIGKILL) after step STEP
    python dist_fit_probe.py stop-file RANK STEP FIT-ARGS...   rank RANK writes RUN_DIR/STOP after step STEP
"""
import hashlib
import os
import signal
import sys

from train.loop.trainer import Trainer
from train.__main__ import main

original_step = Trainer.advance


def weights_digest(model):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.numpy().tobytes())
    return h.hexdigest()


def check_identical(self, index):
    updated = original_step(self, index)
    digests = self.world.allgather_object(weights_digest(self.model))
    if len(set(digests)) != 1:
        raise AssertionError(f"step {self.step}: the ranks' weights differ: {digests}")
    self.checked = getattr(self, "checked", 0) + 1
    if self.main:
        print(f"probe: step {self.step}: {len(digests)} ranks hold identical weights ({self.checked} checked)",
              file=sys.stderr, flush=True)
    return updated


def fail_at(rank, step, how):
    def advance(self, index):
        updated = original_step(self, index)
        if self.world.rank == rank and self.step == step:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if how == "stop-file":
                (self.run_dir / "STOP").touch()
                return updated
            raise RuntimeError(f"injected failure on rank {rank} after step {step}")
        return updated
    return advance


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "check-identical":
        Trainer.advance = check_identical
    else:
        Trainer.advance = fail_at(int(rest[0]), int(rest[1]), mode)
        rest = rest[2:]
    sys.exit(main(rest))
