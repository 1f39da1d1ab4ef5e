#!/usr/bin/env bash
# The project's GPU checks in one run, about 8 minutes on one NVIDIA GPU with CuPy installed:
#   1. python -m train check-gpu              the device, CuPy and CUDA versions, a few training steps
#   2. pytest -m gpu                          the GPU tests on the real CuPy (the stand-in is not used with a GPU)
#   2b. scripts/cuda_sources.py               every fuse kernel's CUDA source as compiled here = as CI builds it
#   2c. attention's kernels against the CPU's (forward and backward)
#   3. python -m train bench --device cuda    training and decoding: step time, tokens/s, GPU memory
#   4. scripts/torch_reference.py             the same training step in PyTorch eager, where torch is installed
#   4b. host time and step time at two batch sizes (the preset's, and BIG_BATCH sentences, 512), and the host cost at
#       tiny sizes (bench --host), each beside PyTorch's: whether the step is bound by the host or by the GPU
#   5. python -m train fit --device cuda      FIT_SECONDS (180) of the preset's training on Multi30k, then Ctrl-C
# Settings (environment): PRESET (small), BENCH_STEPS (20), FIT_SECONDS (180), DATA_DIR (a folder holding
# Multi30k's train/val files; default: where fit looks, $MINITORCH_DATA/multi30k or ~/.cache/minitorch/multi30k),
# OUT_DIR (gpu-check): logs and JSON of each part. Exit status 1 if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
preset=${PRESET:-small}
out=${OUT_DIR:-gpu-check}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
status=0
part() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
failed() { echo "FAILED: $1"; status=1; }

part "1. check-gpu"
python3 -m train check-gpu --preset "$preset" 2>&1 | tee "$out/check_gpu.log" || failed check-gpu

part "2. GPU tests"
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -o addopts="" 2>&1 | tee "$out/pytest_gpu.log" | tail -n 15
[ "${PIPESTATUS[0]}" = 0 ] || failed "GPU tests"

part "2b. the kernels as CuPy compiles them here, against the ones CI builds without a GPU"
# the fused calls of the engine's device tests, recorded on the CuPy stand-in (CPU), then each built twice: as
# scripts/cuda_sources.py builds it in CI (traced, no device) and as CuPy compiles it on this GPU; the sources must agree
sources() {
    python3 tests/record_fused_calls.py "$out/signatures.json" > "$out/record.log" \
        || { tail -n 20 "$out/record.log"; return 1; }
    arch=$(python3 -c "import cupy; print(cupy.cuda.Device().compute_capability)")
    python3 scripts/cuda_sources.py build "$out/signatures.json" --arch "$arch" --sources "$out/sources_ci" || return 1
    python3 scripts/cuda_sources.py device "$out/signatures.json" --sources "$out/sources_gpu" || return 1
    python3 - "$out/sources_ci/index.txt" "$out/sources_gpu/index.txt" <<'PY'
import sys
ci, gpu = (set(open(path).read().split("\n")) - {""} for path in sys.argv[1:])
print(f"{len(ci)} sources built as in CI, {len(gpu)} compiled on the GPU, {len(ci & gpu)} identical")
for line in sorted(ci ^ gpu):
    print(("only in CI:  " if line in ci else "only on GPU: ") + line)
sys.exit(ci != gpu)
PY
}
sources 2>&1 | tee "$out/sources.log" | tail -n 12
[ "${PIPESTATUS[0]}" = 0 ] || failed "kernel sources"
part "2c. attention's backward on the GPU against the CPU's"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/engine/test_kernels.py -k "attention and cuda" 2>&1 \
    | tee "$out/attention.log" | tail -n 3
[ "${PIPESTATUS[0]}" = 0 ] || failed "attention on the GPU"

part "3. bench: training and decoding"
summary() {   # one line of figures from a bench or torch_reference JSON file
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if "implementation" in r:   # scripts/torch_reference.py, beside our bench's file
    m = json.load(open(sys.argv[2]))
    print(f"PyTorch {r['torch']}: {r['step_s_median'] * 1e3:.1f} ms/step, {r['tokens_per_s']:,.0f} tokens/s; "
          f"minitorch / PyTorch tokens/s = {m['tokens_per_s'] / r['tokens_per_s']:.2f}")
elif r["mode"] == "train":
    pool = (r["device_pool_peak_bytes"] or 0) / 2**20
    print(f"{r['preset']} train, {r['batch']['sentences']} sentences: {r['step_s_median'] * 1e3:.1f} ms/step (min "
          f"{r['step_s_min'] * 1e3:.1f}; the host issues it in {r['host_issue_s_median'] * 1e3:.1f}), "
          f"{r['tokens_per_s']:,.0f} target tokens/s, GPU pool peak {pool:,.0f} MB, "
          f"{r['achieved_gflops']:,.0f} of {r['matmul_peak_gflops']:,.0f} GFLOP/s (the fp32 matmul peak)")
else:
    for k in ("beam", "greedy"):
        print(f"{r['preset']} decode {k}: {r[k]['sentences_per_s']:,.1f} sentences/s, "
              f"{r[k]['output_tokens_per_s']:,.0f} tokens/s")
PY
}
python3 -m train bench --preset "$preset" --device cuda --steps "${BENCH_STEPS:-20}" --json > "$out/bench_train.json" \
    && summary "$out/bench_train.json" || failed "bench train"
python3 -m train bench --preset "$preset" --device cuda --mode decode --steps 3 --json > "$out/bench_decode.json" \
    && summary "$out/bench_decode.json" || failed "bench decode"

part "4. PyTorch eager, the same step"
if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/torch_reference.py --preset "$preset" --device cuda --steps "${BENCH_STEPS:-20}" --json \
        > "$out/torch_reference.json" && summary "$out/torch_reference.json" "$out/bench_train.json" \
        || failed "PyTorch reference"
else
    echo "torch is not installed here: no reference figures (pip install -e '.[reference]')"
fi

part "4b. host-bound or GPU-bound: a bigger batch, and the host cost at tiny sizes"
big=${BIG_BATCH:-512}
python3 -m train bench --preset "$preset" --device cuda --steps "${BENCH_STEPS:-20}" --batch-size "$big" --json \
    > "$out/bench_train_big.json" && summary "$out/bench_train_big.json" || failed "bench train, big batch"
if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/torch_reference.py --preset "$preset" --device cuda --steps "${BENCH_STEPS:-20}" \
        --batch-size "$big" --json > "$out/torch_reference_big.json" \
        && summary "$out/torch_reference_big.json" "$out/bench_train_big.json" || failed "PyTorch reference, big batch"
fi
python3 -m train bench --preset "$preset" --device cuda --host --steps 50 2>&1 | tee "$out/bench_host.log" \
    || failed "bench --host"

part "5. fit for ${FIT_SECONDS:-180} s on Multi30k"
rm -rf "$out/fit"
timeout --preserve-status -s INT "${FIT_SECONDS:-180}" python3 -m train fit --preset "$preset" --device cuda --run-dir "$out/fit" \
    ${DATA_DIR:+--data-dir "$DATA_DIR"} > "$out/fit.log" 2>&1
code=$?
tail -n 5 "$out/fit.log"
if [ "$code" = 0 ] || [ "$code" = 130 ]; then
    python3 - "$out/fit/metrics.jsonl" <<'PY' || failed "fit metrics"
import json, sys
for r in (json.loads(line) for line in open(sys.argv[1]) if line.strip()):
    if r["kind"] == "train":
        print(f"step {r['step']:5d}: loss {r['loss']:.3f}, {r['tokens_per_s']:,.0f} target tokens/s")
    elif r["kind"] == "epoch":
        print(f"epoch {r['epoch']}: val loss {r['val_loss']:.3f}, greedy val BLEU {r['val_bleu']:.2f}")
PY
else
    failed "fit (exit $code)"
fi
exit $status
