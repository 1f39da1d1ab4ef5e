"""Decoding with several runs as one model (evaluate and translate --ensemble, fairseq's `--path a:b`).

Each step's next-token log-probabilities are the mean of the members' log-softmax (transformer.decoding.Ensemble).
The members are --run-dir's model plus one per --ensemble RUN_DIR[:CHECKPOINT]; they must translate the same
languages with the same vocabulary (the same SentencePiece pieces and scores, and the same source tags), which two
seeds of one recipe on one corpus have. Decoding settings (beam, length penalty) are --run-dir's.
"""
from ..run import run_folder
from ..run.config import read_config
from ..cli.errors import TrainError


def check_member(run_dir, config, tokenizer, other_dir):
    """(the other run's config): TrainError naming both runs when it translates other languages or has another
    vocabulary than run_dir's."""
    other = read_config(other_dir)
    ours, theirs = config.settings, other.settings
    if (ours.src, ours.tgt) != (theirs.src, theirs.tgt):
        raise TrainError(f"--ensemble {other_dir}: translates {theirs.src}->{theirs.tgt}, but --run-dir "
                         f"{run_dir} {ours.src}->{ours.tgt}")
    their_tok = run_folder.load_tokenizer(other_dir, theirs)
    if their_tok.source_lang != tokenizer.source_lang:
        raise TrainError(f"--ensemble {other_dir}: its sources {'have' if their_tok.source_lang else 'have no'} "
                         f"language tags, unlike --run-dir {run_dir}'s (one was trained with --extra-source)")
    if their_tok.vocabulary() != tokenizer.vocabulary():
        raise TrainError(f"--ensemble {other_dir}: its vocabulary ({their_tok.path}, {their_tok.vocab_size} pieces) "
                         f"differs from --run-dir {run_dir}'s ({tokenizer.vocab_size} pieces); the runs of an "
                         f"ensemble must share one SentencePiece model (same training corpus, --vocab-size and "
                         f"--extra-source)")
    return other


def load_models(args, config, tokenizer, preferred, device, quiet=False):
    """(the model to decode with: --run-dir's, or an Ensemble of it and the --ensemble runs' models, the list of
    'RUN_DIR:CHECKPOINT' it holds). preferred: the checkpoint a run without --checkpoint uses."""
    from transformer.decoding import Ensemble
    name = run_folder.checkpoint_name(args.run_dir, args.checkpoint, quiet=quiet, preferred=preferred)
    models, names = [run_folder.load_model(args.run_dir, config, name, device)], [f"{args.run_dir}:{name}"]
    for other_dir, other_name in getattr(args, "ensemble", []):
        other = check_member(args.run_dir, config, tokenizer, other_dir)
        other_name = other_name or run_folder.checkpoint_name(other_dir, args.checkpoint, quiet=quiet,
                                                              preferred=preferred)
        models.append(run_folder.load_model(other_dir, other, other_name, device))
        names.append(f"{other_dir}:{other_name}")
    return (models[0] if len(models) == 1 else Ensemble(models)), names
