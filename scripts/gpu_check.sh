#!/usr/bin/env bash
# The project's GPU checks in one run of at most 5 minutes on one NVIDIA GPU with CuPy, the project and its nmt extra
# installed, and no network (no corpus to download: the demo corpus is generated, the batches are synthetic):
#   1. python -m train check-gpu              the device, CuPy and CUDA versions, a matmul against NumPy, a few steps
#   2. the kernels as CuPy compiles them here against the ones CI builds without a GPU: the fused calls of what a GPU
#      training run calls (tests/record_fused_calls.py --training, recorded on the CuPy stand-in on the CPU), built
#      by scripts/cuda_sources.py as in CI (traced, no device) and run on this GPU; the two sets of modules must agree
#   3. tests/engine/test_kernels.py -k cuda on the real CuPy: every GPU kernel against its reference op (values, first
#      and second derivatives; the paths without a device run in CI)
#   4. scripts/step_check.py: one whole training step (the same weights and batch, dropout off) on the CPU and on the
#      GPU, in float32, with TF32 and in float16 (these two where the engine has them: else "not available"), the
#      loss and every gradient compared within the script's stated tolerances (TOLERANCES)
#   5. python -m train bench --device cuda    a training step in each precision the CLI offers (--precision and
#      --tf32, where they exist), the lstm-attn step, and decoding: step time, tokens/s, GPU memory
# Settings (environment): PRESET (small; demo on the stand-in), BENCH_STEPS (10), OUT_DIR (gpu-check): logs and JSON of each part;
# SIGNATURES: a JSON of recorded fused calls to use in part 2 instead of recording them here (CI's);
# GPU_CHECK_STANDIN=1 runs what can run without a GPU on the CuPy stand-in of tests/ (the device half of part 2 is
# skipped), to try the script on a machine without one. Each part prints its time; exit status 1 if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
standin=${GPU_CHECK_STANDIN:-0}
default_preset=small
[ "$standin" = 1 ] && default_preset=demo   # the stand-in computes on the CPU
preset=${PRESET:-$default_preset}
out=${OUT_DIR:-gpu-check}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
real_cupy_path=$PYTHONPATH                       # scripts/cuda_sources.py build needs the real CuPy, GPU or not
[ "$standin" = 1 ] && export PYTHONPATH=$PWD/tests/cupy_standin:$PYTHONPATH
status=0
started=$(date +%s)
part_start=$started
part() {
    [ -n "${part_name:-}" ] && printf '   (%s: %d s)\n' "$part_name" "$(( $(date +%s) - part_start ))"
    part_name=$1 part_start=$(date +%s)
    [ -n "$1" ] && printf '\n== %s (%s)\n' "$1" "$(date +%T)"
}
failed() { echo "FAILED: $1"; status=1; }

part "1. check-gpu"
timeout 90 python3 -m train check-gpu --preset "$preset" --steps 3 --warmup-steps 1 2>&1 | tee "$out/check_gpu.log" \
    || failed check-gpu

part "2. the kernels as CuPy compiles them here, against the ones CI builds without a GPU"
sources() {
    signatures=${SIGNATURES:-$out/signatures.json}
    if [ -z "${SIGNATURES:-}" ]; then   # recorded on the stand-in (on the CPU), each precision in its own process
        precisions=$(PYTHONPATH=$real_cupy_path python3 -c "
import sys; sys.path.insert(0, 'tests'); import record_fused_calls; print(*record_fused_calls.PRECISIONS)")
        pids=()
        for p in $precisions; do
            PYTHONPATH=$PWD/tests/cupy_standin:$real_cupy_path timeout 150 python3 tests/record_fused_calls.py \
                --training --precision "$p" "$out/signatures_$p.json" & pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || return 1; done
        python3 - "$signatures" $(for p in $precisions; do echo "$out/signatures_$p.json"; done) <<'PY' || return 1
import json, sys
joined = {}
for path in sys.argv[2:]:
    for name, calls in json.load(open(path)).items():
        joined.setdefault(name, set()).update(json.dumps(c) for c in calls)
json.dump({name: [json.loads(c) for c in sorted(calls)] for name, calls in joined.items()}, open(sys.argv[1], "w"))
PY
    fi
    if [ "$standin" = 1 ]; then
        arch=90
    else
        arch=$(python3 -c "import cupy; print(cupy.cuda.Device().compute_capability)") || return 1
    fi
    PYTHONPATH=$real_cupy_path timeout 90 python3 scripts/cuda_sources.py build "$signatures" --arch "$arch" --partial \
        --sources "$out/sources_ci" || return 1
    if [ "$standin" = 1 ]; then
        echo "the GPU half (scripts/cuda_sources.py device) needs a GPU: skipped on the stand-in"
        return 0
    fi
    timeout 90 python3 scripts/cuda_sources.py device "$signatures" --sources "$out/sources_gpu" || return 1
    python3 - "$out/sources_ci/index.txt" "$out/sources_gpu/index.txt" <<'PY'
import sys
ci, gpu = (set(open(path).read().split("\n")) - {""} for path in sys.argv[1:])
print(f"{len(ci)} modules built as in CI, {len(gpu)} compiled on the GPU, {len(ci & gpu)} identical")
for line in sorted(ci ^ gpu):
    print(("only in CI:  " if line in ci else "only on GPU: ") + line)
sys.exit(ci != gpu)
PY
}
sources 2>&1 | tee "$out/sources.log" | tail -n 12
[ "${PIPESTATUS[0]}" = 0 ] || failed "kernel sources"

part "3. the GPU kernels against their reference ops (tests/engine/test_kernels.py)"
timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/engine/test_kernels.py -k cuda 2>&1 \
    | tee "$out/kernels.log" | tail -n 3
[ "${PIPESTATUS[0]}" = 0 ] || failed "kernel tests"

part "4. one training step on the CPU and on the GPU: losses and gradients"
timeout 150 python3 scripts/step_check.py --preset "$preset" 2>&1 | tee "$out/step_check.log" \
    || failed "training step, CPU against GPU"

part "5. bench: training in each precision, the lstm-attn step, decoding"
summary() {   # one line of figures from a bench JSON file
    python3 - "$@" <<'PY'
import json, sys
r, label = json.load(open(sys.argv[1])), sys.argv[2]
if r["mode"] == "train":
    pool = (r["device_pool_peak_bytes"] or 0) / 2**20
    flops = (f", {r['achieved_gflops']:,.0f} of {r['matmul_peak_gflops']:,.0f} GFLOP/s (the fp32 matmul peak)"
             if r.get("achieved_gflops") else "")
    launches = r.get("launches", {}).get("total")
    print(f"{label}: {r['step_s_median'] * 1e3:.1f} ms/step (the host issues it in "
          f"{r['host_issue_s_median'] * 1e3:.1f}), {r['tokens_per_s']:,.0f} target tokens/s, GPU pool peak "
          f"{pool:,.0f} MB{flops}" + (f", {launches:,} launches (stand-in)" if launches else ""))
else:
    for k in ("beam", "greedy"):
        print(f"{label} {k}: {r[k]['sentences_per_s']:,.1f} sentences/s, {r[k]['output_tokens_per_s']:,.0f} tokens/s")
PY
}
bench() {   # label, then bench's flags
    label=$1 && shift
    file="$out/bench_$(echo "$label" | tr -c 'a-z0-9\n' '_').json"
    timeout 90 python3 -m train bench --preset "$preset" --device cuda --json "$@" > "$file" \
        && summary "$file" "$label" || failed "bench $label"
}
steps=${BENCH_STEPS:-10}
help=$(python3 -m train bench --help)
precisions=$(echo "$help" | python3 -c "
import re, sys
m = re.search(r'--precision \{([^}]*)\}', sys.stdin.read())
print(' '.join(m.group(1).split(',')) if m else '')")
if [ -z "$precisions" ]; then
    echo "bench has no --precision here: float32 only (fp16: not available)"
    bench "$preset train float32" --steps "$steps" --warmup-steps 2
else
    for p in $precisions; do bench "$preset train $p" --steps "$steps" --warmup-steps 2 --precision "$p"; done
fi
if echo "$help" | grep -q -- "--tf32"; then
    bench "$preset train float32 with TF32" --steps "$steps" --warmup-steps 2 --tf32
else
    echo "bench has no --tf32 here (TF32: not available)"
fi
bench "$preset lstm-attn train float32" --model lstm-attn --steps 3 --warmup-steps 1
bench "$preset decode" --mode decode --steps 1 --batch-size 32
part ""
echo "gpu_check: $(( $(date +%s) - started )) s in all"
exit $status
