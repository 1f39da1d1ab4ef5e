"""evaluate: translate a split (or given files) with beam search and score it with sacreBLEU and chrF.

BLEU is sacreBLEU's corpus BLEU on detokenized, cased text with the 13a tokenizer; BLEU on lowercased text is printed
beside it for comparison with work that lowercases. The hypotheses are written to the run folder.
"""
import json
import time
from pathlib import Path

from ..data import corpus
from ..evaluation import ensemble, metrics
from ..cli import parallel, progress
from ..cli.arguments import check_device
from ..run import run_folder, threads
from ..run.config import read_config
from ..evaluation.arguments import add_decoding_arguments, decoding
from ..evaluation.decode import translate_lines
from ..cli.errors import TrainError, UsageError

DEFAULT_SPLITS = ("test_2016_flickr", "test", "val")  # the first one present is evaluated when --split is not given


def add_arguments(p):
    add_decoding_arguments(p)
    p.add_argument("--split", help="a split of the run's corpus, e.g. test_2016_flickr, val (default: the first "
                                   f"of {', '.join(DEFAULT_SPLITS)} that exists)")
    p.add_argument("--src-file", help="translate this file instead of a split (needs --ref-file)")
    p.add_argument("--ref-file", help="the reference translations of --src-file, line by line")
    parallel.add_distributed_argument(p, "decoding (each process translates a share of the sentences)")


def main(args):
    device = check_device(args.device)
    world = parallel.init_world(args.distributed, device)
    with parallel.stop_job_on_error(world, "evaluate"):
        return evaluate(args, device, world)


def evaluate(args, device, world):
    """Translate, score, print and record (rank 0 writes; every rank translates its share)."""
    config = read_config(args.run_dir)
    s = config.settings
    blas = threads.setup(s.preset, args.threads, world)[0]
    if (args.src_file is None) != (args.ref_file is None):
        raise UsageError("--src-file and --ref-file go together")
    if args.src_file is not None:
        if args.split:
            raise UsageError("give either --split or --src-file/--ref-file, not both")
        sources, references = corpus.read_aligned(args.src_file, args.ref_file)
        name = Path(args.src_file).name
    else:
        data_dir = corpus.recorded_folder(s, args.run_dir, "--src-file and --ref-file")
        if not data_dir.is_dir():
            raise TrainError(f"the run's corpus folder {data_dir} is gone; use --src-file and --ref-file")
        present = corpus.available_splits(data_dir, s.src, s.tgt)
        name = args.split or next((x for x in DEFAULT_SPLITS if x in present), None)
        if name not in present:
            raise TrainError(f"no split {name!r} for {s.src}->{s.tgt} in {data_dir}; it has "
                             f"{', '.join(present) or 'none'}")
        sources, references = corpus.read_parallel(data_dir, name, s.src, s.tgt)
    tokenizer = run_folder.load_tokenizer(args.run_dir, s)
    chosen = decoding(config.settings, args)
    model, members = ensemble.load_models(args, config, tokenizer, chosen["checkpoint"], device,
                                          quiet=not world.is_main)
    checkpoint = members[0].rpartition(":")[2]
    beam, length_penalty = chosen["beam"], chosen["length_penalty"]

    start = time.perf_counter()
    hypotheses = translate_lines(model, tokenizer, sources, beam=beam, length_penalty=length_penalty,
                                 batch_tokens=args.batch_tokens, device=device, progress=world.is_main,
                                 world=world)
    seconds = progress.elapsed(start, time.perf_counter())
    if not world.is_main:
        return 0
    together = f".ensemble{len(members)}" if len(members) > 1 else ""
    out = Path(args.run_dir) / f"hyp.{name}.{checkpoint}{together}.beam{beam}.{s.tgt}"
    out.write_text("".join(h + "\n" for h in hypotheses), encoding="utf-8")

    bleu, bleu_sig = metrics.bleu(hypotheses, references)
    chrf, chrf_sig = metrics.chrf(hypotheses, references)
    bleu_lc, bleu_lc_sig = metrics.bleu(hypotheses, references, lowercase=True)
    if len(members) > 1:
        print(f"ensemble of {len(members)}: {', '.join(members)} (the mean of their log-probabilities)")
    print(f"{name}: {len(sources)} sentences, checkpoint {checkpoint}, beam {beam}, length penalty "
          f"{length_penalty}, {seconds:.1f} s with "
          f"{blas['threads']} BLAS thread{'s' if blas['threads'] > 1 else ''} ({blas['chosen_by']})")
    print(f"BLEU  {bleu:6.2f}  {bleu_sig}")
    print(f"chrF  {chrf:6.2f}  {chrf_sig}")
    print(f"BLEU  {bleu_lc:6.2f}  {bleu_lc_sig}   (lowercased, for comparison only)")
    print(f"hypotheses: {out}")
    record = {"split": name, "checkpoint": checkpoint, "beam": beam, "length_penalty": length_penalty,
              "sentences": len(sources), "bleu": bleu, "bleu_signature": bleu_sig, "chrf": chrf,
              "chrf_signature": chrf_sig, "bleu_lowercase": bleu_lc, "bleu_lowercase_signature": bleu_lc_sig,
              "seconds": seconds, "hypotheses": out.name}
    if len(members) > 1:
        record["ensemble"] = members
    with open(Path(args.run_dir) / "evaluations.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    return 0
