"""The training pipeline end to end on tiny settings: fit -> evaluate on a few steps, overfitting to BLEU 100 (slow),
exact resume after Ctrl-C or a crash, the demo preset's fit -> translate -> evaluate -> plot, and checkpoint
averaging."""
import io
import json

import numpy as np
import pytest
from conftest import PAIRS, final_weights, interrupt_at, records, tiny_fit, without_timing

import minitorch as mt
from train.run import checkpoint
from train.__main__ import main


def test_fit_then_evaluate_write_and_read_a_run(tiny_corpus, tmp_path, capsys):
    """The CLI's wiring on a few steps: fit's run folder is what evaluate reads, and evaluate's record and
    hypotheses are written (the overfitting test below checks that the figures are right)."""
    run_dir = tmp_path / "run"
    assert main(tiny_fit(tiny_corpus, run_dir, "--batch-tokens", "128", "--max-steps", "3")) == 0
    assert "parameters: " in capsys.readouterr().out
    assert [r["step"] for r in records(run_dir) if r["kind"] == "epoch"] == [3]
    assert main(["evaluate", "--run-dir", str(run_dir), "--beam", "2"]) == 0   # the default split: test here
    out = capsys.readouterr().out
    assert "tok:13a" in out and "case:mixed" in out and "case:lc" in out
    result = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()][-1]
    assert result["split"] == "test" and result["beam"] == 2 and 0 <= result["bleu"] <= 100
    assert len((run_dir / result["hypotheses"]).read_text().splitlines()) == len(PAIRS)


@pytest.mark.slow
def test_tiny_model_overfits_a_handful_of_pairs_to_bleu_100(tiny_corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(tiny_fit(tiny_corpus, run_dir, "--batch-tokens", "128", "--epochs", "12", "--lr", "3e-3",
                         "--warmup", "30", "--dropout", "0")) == 0
    epochs = [r for r in records(run_dir) if r["kind"] == "epoch"]
    assert len(epochs) == 12 and epochs[-1]["val_bleu"] == pytest.approx(100.0)
    assert epochs[-1]["val_loss"] < epochs[0]["val_loss"] / 3
    assert main(["evaluate", "--run-dir", str(run_dir), "--beam", "5"]) == 0
    result = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()][-1]
    assert result["bleu"] == pytest.approx(100.0) and result["chrf"] == pytest.approx(100.0)
    hyps = (run_dir / result["hypotheses"]).read_text().splitlines()
    assert hyps == [p[1] for p in PAIRS]


@pytest.mark.parametrize("how", ["ctrl-c", "stop-file", "crash"])
def test_resume_gives_the_same_metrics_as_an_uninterrupted_run(tiny_corpus, tmp_path, monkeypatch, how):
    settings = ["--batch-tokens", "64", "--epochs", "2", "--dropout", "0.1", "--save-every", "20"]
    straight = tmp_path / "straight"
    assert main(tiny_fit(tiny_corpus, straight, *settings)) == 0

    stopped = tmp_path / "stopped"
    with monkeypatch.context() as m:
        interrupt_at(m, 35, how)
        if how in ("ctrl-c", "stop-file"):
            assert main(tiny_fit(tiny_corpus, stopped, *settings)) == 130   # saves `last` at step 35
            assert mt.load(stopped / "last.npz")["progress"]["step"] == 35
            assert not (stopped / "STOP").exists()                         # or the resumed run would stop
        else:
            with pytest.raises(RuntimeError, match="simulated crash"):
                main(tiny_fit(tiny_corpus, stopped, *settings))           # the last save was at step 20
            assert mt.load(stopped / "last.npz")["progress"]["step"] == 20
            assert records(stopped)[-1]["step"] == 30                      # to be dropped on resume
    assert main(tiny_fit(tiny_corpus, stopped, "--resume")) == 0

    assert without_timing(records(stopped)) == without_timing(records(straight))
    a, b = final_weights(straight), final_weights(stopped)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_resume_refuses_changed_settings_and_a_new_run_refuses_an_old_folder(tiny_corpus, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(tiny_fit(tiny_corpus, run_dir, "--batch-tokens", "256", "--max-steps", "2")) == 0
    capsys.readouterr()
    assert main(tiny_fit(tiny_corpus, run_dir, "--batch-tokens", "256")) == 1
    assert "already holds a run stopped at step 2 (epoch 1 of 1); add --resume" in capsys.readouterr().err
    assert main(tiny_fit(tiny_corpus, run_dir, "--batch-tokens", "512", "--resume")) == 1
    err = capsys.readouterr().err
    assert "--batch-tokens 512 differs from the run's 256" in err and len(err.strip().splitlines()) == 1
    assert main(tiny_fit(tiny_corpus, run_dir, "--resume", "--max-steps", "4")) == 0   # continues from step 2
    steps = [r["step"] for r in records(run_dir) if r["kind"] == "epoch"]
    assert steps == [2, 4]
    assert main(tiny_fit(tiny_corpus, tmp_path / "none", "--resume")) == 1
    assert "--run-dir " + str(tmp_path / "none") + ": no such folder" in capsys.readouterr().err
    (run_dir / "last.npz").unlink()
    assert main(tiny_fit(tiny_corpus, run_dir, "--resume")) == 1
    assert "holds no last.npz" in capsys.readouterr().err


def test_avg_checkpoint_is_the_mean_of_the_last_k_epochs(tmp_path):
    model = mt.nn.Linear(3, 2)
    expected = []
    for epoch in range(1, 5):
        model.weight.data[...] = epoch * np.arange(6, dtype=np.float32).reshape(2, 3)
        model.bias.data[...] = -epoch
        checkpoint.save_model(tmp_path / f"epoch-{epoch}.npz", model, epoch=epoch)
        expected.append({k: v.numpy().copy() for k, v in model.state_dict().items()})
    kept = checkpoint.keep_last_snapshots(tmp_path, 3)
    assert [p.name for p in kept] == ["epoch-2.npz", "epoch-3.npz", "epoch-4.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-2.npz", "epoch-3.npz", "epoch-4.npz"]
    avg = checkpoint.average_states(kept)
    for k in avg:
        np.testing.assert_allclose(avg[k], (expected[1][k] + expected[2][k] + expected[3][k]) / 3, rtol=1e-6)


@pytest.mark.slow
def test_demo_preset_end_to_end_on_a_few_steps(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "demo"
    assert main(["fit", "--preset", "demo", "--run-dir", str(run_dir), "--max-steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "generated the demo corpus" in out and "hypothesis:" in out
    assert {"config.json", "spm.model", "metrics.jsonl", "last.npz", "best.npz", "avg.npz"} <= \
        {p.name for p in run_dir.iterdir()}

    too_long = "The big dog saw a red ball near the river. " * 20   # longer than the demo model's max_len
    sentences = ["The big dog saw a red ball.", "", too_long, "Two cats eat the cake."]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(s + "\n" for s in sentences)))
    assert main(["translate", "--run-dir", str(run_dir), "--beam", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[4] == ""    # one line out per line in
    assert "1 of 4 lines (line 3) had more than 77 tokens" in captured.err
    assert "must fit the model's max_len of 128 tokens" in captured.err

    src = (run_dir / "data" / "test.en").read_text().splitlines()[:4]
    ref = (run_dir / "data" / "test.toy").read_text().splitlines()[:4]
    (tmp_path / "src.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(ref) + "\n")
    assert main(["evaluate", "--run-dir", str(run_dir), "--src-file", str(tmp_path / "src.txt"), "--ref-file",
                 str(tmp_path / "ref.txt"), "--beam", "2", "--checkpoint", "avg"]) == 0
    assert "BLEU" in capsys.readouterr().out
    assert len((run_dir / "hyp.src.txt.avg.beam2.toy").read_text().splitlines()) == 4

    assert main(["plot", "--run-dir", str(run_dir)]) == 0
    for name in ("curves.png", "attention.png", "positional_encoding.png"):
        assert (run_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_max_steps_at_an_epoch_end_validates_once(tiny_corpus, tmp_path):
    one_epoch = tmp_path / "one"
    assert main(tiny_fit(tiny_corpus, one_epoch, "--batch-tokens", "128", "--epochs", "1")) == 0
    n = [r for r in records(one_epoch) if r["kind"] == "epoch"][0]["step"]
    capped = tmp_path / "capped"
    assert main(tiny_fit(tiny_corpus, capped, "--batch-tokens", "128", "--epochs", "3", "--max-steps", str(n))) == 0
    epochs = [r for r in records(capped) if r["kind"] == "epoch"]
    assert [(r["step"], r["partial"]) for r in epochs] == [(n, False)]
    assert without_timing(records(capped)) == without_timing(records(one_epoch))
