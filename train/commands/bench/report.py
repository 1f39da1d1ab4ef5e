"""The bench's tables: a train or decode result, a data-parallel comparison, and a profile by op kind."""
import sys

from transformer.registry import DEFAULT_MODEL


def progress_printer(enabled):
    """say(text): a progress line on stderr when enabled, nothing otherwise."""
    return (lambda text: print(text, file=sys.stderr, flush=True)) if enabled else (lambda text: None)


def _mb(n):
    if n is None:
        return "n/a"
    mb = n / 2**20
    return f"{mb:,.0f} MB" if mb >= 10 else f"{mb:.2f} MB"


def print_result(r):
    b = r["batch"]
    threads = ", ".join(f"{k} {v}" for k, v in r["blas_threads"].items()) or "unknown"
    why = f" ({r['blas_threads_chosen_by']}; --threads N to change)" if "blas_threads_chosen_by" in r else ""
    others = ", ".join(f"{k} {v}" for k, v in r.get("other_threads", {}).items())
    others = f"; other thread pools, not set by --threads: {others}" if others else ""
    model = "" if r.get("model", DEFAULT_MODEL) == DEFAULT_MODEL else f" {r['model']}"
    precision = f", {r['precision']}" if "precision" in r else ""
    print(f"minitorch bench: {r['mode']}, preset {r['preset']}{model} ({r['parameters']:,} parameters), "
          f"{r['device']}{precision}, BLAS threads: {threads}{why}{others}")
    if r["mode"] == "train":
        print(f"batch: {b['sentences']} sentences x {b['src_len']} source / {b['tgt_len']} target tokens, "
              f"{b['padding']:.0%} padding, {b['target_tokens']:,} target tokens, vocabulary {b['vocab_size']:,}")
        overflows = f"; {r['overflow_steps']} skipped for fp16 overflow" if r.get("overflow_steps") else ""
        print(f"{r['steps']} timed steps after {r['warmup_steps']} warm-up (loss {r['losses'][0]:.3f} -> "
              f"{r['losses'][-1]:.3f}{overflows})")
        rows = [("step time, median", f"{r['step_s_median'] * 1e3:,.0f} ms"),
                ("step time, min", f"{r['step_s_min'] * 1e3:,.0f} ms"),
                ("target tokens/s", f"{r['tokens_per_s']:,.0f}"),
                ("peak RSS of the process", _mb(r["peak_rss_bytes"])),
                ("RSS before the timed steps", _mb(r["rss_before_steps_bytes"])),
                ("peak RSS during them", _mb(r["step_peak_rss_bytes"])),
                ("  increase during a step", _mb(r["step_rss_increase_bytes"])),
                ("saved for backward", _mb(r["saved_for_backward_bytes"])),
                ("float32 matmul peak", f"{r['matmul_peak_gflops']:,.1f} GFLOP/s")]
        if r["step_matmul_gflop"] is not None:   # the Transformer's count (an LSTM's has no formula here)
            rows[-1:-1] = [("matmul GFLOP a step", f"{r['step_matmul_gflop']:,.1f}"),
                           ("achieved GFLOP/s", f"{r['achieved_gflops']:,.1f}")]
            rows.append(("fraction of the peak", f"{r['peak_fraction']:.3g}"))
        if r.get("traced_step_peak_bytes") is not None:   # the CPU's, traced (tracemalloc) on one more step
            rows.insert(8, ("graph after forward+loss", _mb(r["traced_graph_bytes"])))
            rows.insert(9, ("step peak above before it", _mb(r["traced_step_peak_bytes"])))
        if r["device"] == "cuda":
            rows.insert(7, ("GPU memory pool peak", _mb(r["device_pool_peak_bytes"])))
            rows.insert(2, ("host time to issue it", f"{r['host_issue_s_median'] * 1e3:,.0f} ms "
                                                      f"({r['host_issue_s_median'] / r['step_s_median']:.0%})"))
        for name, value in rows:
            print(f"  {name:<28} {value:>16}")
        if "launches" in r:
            print_launches(r["launches"])
        if "profile" in r:
            print_profile(r["profile"])
    else:
        print(f"{b['sentences']} synthetic sentences of up to {b['src_len']} source tokens, vocabulary "
              f"{b['vocab_size']:,}, batches of {b['batch_tokens']:,} tokens / beam; output length up to "
              f"{b['max_len']}; median of {r['reps']} run(s)")
        header = f"  {'search':<10} {'sentences/s':>12} {'out tokens/s':>13} {'tokens/sentence':>16} {'seconds':>9}"
        print(header)
        for name in ("beam", "greedy"):
            s = r[name]
            label = f"beam {s['beam_size']}" if name == "beam" else "greedy"
            print(f"  {label:<10} {s['sentences_per_s']:>12,.1f} {s['output_tokens_per_s']:>13,.0f} "
                  f"{s['output_tokens_per_sentence']:>16.1f} {s['s_median']:>9.2f}")
        print(f"  peak RSS of the process {_mb(r['peak_rss_bytes'])}; increase while decoding "
              f"{_mb(r['decode_rss_increase_bytes'])}" +
              (f"; GPU memory pool peak {_mb(r['device_pool_peak_bytes'])}" if r["device"] == "cuda" else ""))


def _ms(seconds):
    ms = 1e3 * seconds
    return f"{ms:,.0f} ms" if ms >= 10 else f"{ms:.2f} ms"


def print_distributed(r):
    """The table of `bench --distributed`: one process alone against the data-parallel job."""
    b, one, dp, n = r["batch"], r["one_process"], r["data_parallel"], r["n_ranks"]
    processes = f"{n} process{'es' if n > 1 else ''}"
    print(f"minitorch bench: train, data-parallel over {processes}, preset {r['preset']} ({r['parameters']:,} "
          f"parameters), {r['device']}")
    print(f"batch: {b['sentences']} sentences x {b['src_len']} source / {b['tgt_len']} target tokens, "
          f"{b['padding']:.0%} padding, {b['target_tokens']:,} target tokens, vocabulary {b['vocab_size']:,}; "
          f"sentences a process: {', '.join(map(str, b['rank_sentences']))}")
    print("BLAS threads: " + "; ".join(f"rank {rank} " + (", ".join(f"{k} {v}" for k, v in threads.items()) or
                                                          "unknown") for rank, threads in enumerate(r["blas_threads"])))
    print(f"{r['steps']} timed steps after {r['warmup_steps']} warm-up, each way (loss {one['losses'][0]:.3f} -> "
          f"{one['losses'][-1]:.3f} alone, {dp['losses'][0]:.3f} -> {dp['losses'][-1]:.3f} data-parallel)")
    reduced = n > 1
    rows = [("", "1 process", processes),
            ("step time, median", _ms(one["step_s_median"]), _ms(dp["step_s_median"])),
            ("step time, min", _ms(one["step_s_min"]), _ms(dp["step_s_min"])),
            ("target tokens/s", f"{one['tokens_per_s']:,.0f}", f"{dp['tokens_per_s']:,.0f}"),
            ("speed-up", "", f"{r['speedup']:.2f}"),
            ("scaling efficiency", "", f"{r['scaling_efficiency']:.2f}"),
            ("allreduce a step, median", "", _ms(r["allreduce_ms_median"] / 1e3) if reduced else "none"),
            ("  with the wait for ranks", "", _ms(r["allreduce_with_wait_ms_median"] / 1e3) if reduced else "none"),
            ("gradients summed a step", "", _mb(r["allreduce_bytes_per_step"]) if reduced else "none")]
    for name, alone, together in rows:
        print(f"  {name:<28} {alone:>12} {together:>14}")


def print_profile(p, top=12):
    print(f"\nprofile: {p['steps']} step(s) with every op timed, {p['step_ms']:,.0f} ms a step "
          f"(forward+loss {p['phases_ms']['forward_loss']:,.0f}, backward {p['phases_ms']['backward']:,.0f}, "
          f"clipping {p['phases_ms']['clipping']:,.0f}, optimizer {p['phases_ms']['optimizer']:,.0f} ms)")
    print(f"  {'where':<28} {'ms/step':>9} {'% of step':>10}")
    for row in p["kinds"]:
        print(f"  {row['kind']:<28} {row['ms']:>9,.2f} {row['percent']:>9.1f}%")
    print(f"  matmul ops run at {p['matmul_op_gflops']:,.1f} GFLOP/s = {p['matmul_op_peak_fraction']:.2f} of the "
          f"peak (the attention products are inside the fused attention op)")
    print(f"\n  the {min(top, len(p['ops']))} slowest ops:")
    print(f"  {'op':<28} {'kind':<18} {'calls':>6} {'forward ms':>11} {'backward ms':>12} {'% of step':>10}")
    for row in p["ops"][:top]:
        print(f"  {row['op']:<28} {row['kind']:<18} {row['calls']:>6.0f} {row['forward_ms']:>11,.1f} "
              f"{row['backward_ms']:>12,.1f} {row['percent']:>9.1f}%")


def print_launches(n):
    """Kernel launches of one step by phase (the stand-in's count), or how to count them on a GPU."""
    if "unavailable" in n:
        print(f"kernel launches: {n['unavailable']}")
        return
    u = n["update"]
    print(f"kernel launches a step (CuPy stand-in's count): {n['total']:,} = forward+loss {n['forward_loss']:,} + "
          f"backward {n['backward']:,} + update {u['total']:,} (zero_grad {u['zero_grad']:,}, clipping "
          f"{u['clip']:,}, optimizer {u['optimizer']:,}) + the step's read {n['read']:,}")
    print("  by kind: " + ", ".join(f"{k} {v:,}" for k, v in sorted(n["by_kind"].items(), key=lambda kv: -kv[1])) +
          "; host<->device copies (not counted): " + (", ".join(f"{k} {v}" for k, v in n["memcpys"].items()) or
                                                      "none"))
