"""`python -m train bench` with a very small preset registered first, for tests/training/test_bench_distributed.py to
run under mpirun (a preset patched into PRESETS inside the test process would not reach the MPI job's processes).

    python dist_bench_micro.py bench --preset bench-micro --distributed ...
"""
import sys

from train.__main__ import main
from train.run.presets import PRESETS, Preset

# dropout 0: the data-parallel step then computes what the one-process step does, so their losses can be compared
MICRO = Preset("bench-micro", "a few-thousand-parameter model for the distributed bench's tests",
               model=dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2, dropout=0.0,
                          max_len=64, norm="pre"),
               vocab_size=40, batch_tokens=64, lr=1e-3, warmup=10)

if __name__ == "__main__":   # only in the MPI job's processes, not in a test process that imports MICRO
    PRESETS[MICRO.name] = MICRO
    sys.exit(main(sys.argv[1:]))
