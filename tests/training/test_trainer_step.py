"""Trainer.train_step has one job, the update: where the run stands, the window statistics, the skipped batches, the
stop votes, the BLAS-thread check, metrics.jsonl and config.json are kept beside it (Trainer.advance), not inside."""
import copy
import json
from dataclasses import asdict

from conftest import fit_argv, make_corpus

from cli_runner import run_cli


def test_train_step_only_steps_and_the_loop_keeps_the_rest(tmp_path, monkeypatch, capsys):
    from train.loop.trainer import Trainer
    run_dir, unchanged, stepped = tmp_path / "run", [], []
    original = Trainer.train_step

    def kept(trainer):
        files = {name: (run_dir / name).read_bytes() if (run_dir / name).exists() else None
                 for name in ("config.json", "metrics.jsonl", "last.npz")}
        check = trainer.blas_check
        return (copy.deepcopy(asdict(trainer.progress)), list(trainer.bad_steps), trainer.stop_votes, check.steps,
                copy.deepcopy(check.per_token), check.current, files)

    def watched(self, index, stop_vote=False):
        before = kept(self)
        done = original(self, index, stop_vote)
        unchanged.append(kept(self) == before)
        stepped.append(done.n_tokens > 0 and done.seconds >= 0 and done.result.applied)
        return done
    monkeypatch.setattr(Trainer, "train_step", watched)
    status, out, err = run_cli(fit_argv(make_corpus(tmp_path / "corpus", copies=24), run_dir, "--max-steps", "11"),
                               capsys)
    assert status == 0, err
    assert unchanged == [True] * 11 and stepped == [True] * 11
    # ... and the loop kept them: the steps counted, a train record of the window at log_every (10 for tiny)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "train"][:1] == [10]
    assert records[-1]["kind"] == "epoch" and records[-1]["step"] == 11
