"""Decode mode: beam search and greedy decoding of synthetic sentences timed, as evaluate runs them."""
import statistics
import time

from minitorch import backend
from transformer.registry import MAX_LEN_A, MAX_LEN_B

from ...evaluation.decode import translate_ids
from .machine import HostMemory, blas_threads
from .report import progress_printer
from .workload import build_model, synthetic_batch

BEAM = 5

def bench_decode(preset, device, batch_size, seq_len, reps, seed, progress=True, kind="transformer"):
    """Time beam search (beam 5) and greedy decoding of batch_size synthetic sentences by a model kind, `reps` times
    each."""
    say = progress_printer(progress)
    src_ids, _ = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    model = build_model(preset, device, seed, kind).eval()
    say(f"warm-up on 2 sentences, then {reps} timed run(s) of {batch_size} sentences: {preset.name}, {device}")
    translate_ids(model, src_ids[:2], beam=BEAM, batch_tokens=preset.batch_tokens, device=device)
    memory = HostMemory()
    backend.device_memory(device, release=True)
    rss_before, peak_reset = memory.rss(), memory.reset_peak()
    searches = {}
    for name, beam in (("beam", BEAM), ("greedy", 1)):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            hyps = translate_ids(model, src_ids, beam=beam, batch_tokens=preset.batch_tokens, device=device)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        out_tokens = sum(len(h) + 1 for h in hyps)   # eos included: each one is a decoding step
        searches[name] = {"beam_size": beam, "seconds": times, "s_median": median, "s_min": min(times),
                          "sentences_per_s": len(src_ids) / median, "output_tokens_per_s": out_tokens / median,
                          "output_tokens_per_sentence": out_tokens / len(src_ids)}
    _, device_peak = backend.device_memory(device)
    step_peak = memory.peak_since_reset() if peak_reset else None
    return {"mode": "decode", "preset": preset.name, "model": kind, "device": device,
            "parameters": model.num_parameters(),
            "batch": {"sentences": batch_size, "src_len": seq_len, "vocab_size": preset.vocab_size, "seed": seed,
                      "max_len": f"{MAX_LEN_A} x source length + {MAX_LEN_B}",
                      "batch_tokens": preset.batch_tokens},
            "reps": reps, **searches,
            "peak_rss_bytes": memory.peak_rss(), "rss_before_bytes": rss_before,
            "decode_rss_increase_bytes": step_peak - rss_before if step_peak else None,
            "device_pool_peak_bytes": device_peak if device == "cuda" else None,
            "blas_threads": blas_threads(), "other_threads": blas_threads(blas=False)}
