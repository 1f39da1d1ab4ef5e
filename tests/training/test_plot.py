"""plot on a run stopped before its first epoch ended (one training record, `last` alone), without a library
warning; BLEU labels clear of the chrF markers; a colour bar on the attention maps. Warnings are errors here."""
import matplotlib
import pytest

from cli_runner import run_cli
from train.commands import plot
from train.run import run_folder
from train.run.config import read_config

matplotlib.use("Agg")
pytestmark = pytest.mark.filterwarnings("error")


def epoch(step, bleu, chrf):
    return {"kind": "epoch", "step": step, "val_loss": 2.0, "val_nll": 1.5, "val_bleu": bleu, "val_chrf": chrf,
            "val_bleu_sentences": 100}


def test_plot_of_a_run_stopped_before_its_first_epoch_ended(stopped_run, capsys):  # noqa: F811
    status, out, err = run_cli(["plot", "--run-dir", str(stopped_run)], capsys)
    assert status == 0, err
    assert err.splitlines() == [f"note: {stopped_run} has no best.npz yet (it is written at the end of each epoch); "
                                f"using last.npz"]
    for name in ("curves.png", "attention.png", "positional_encoding.png"):
        assert (stopped_run / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_curve_of_one_point_is_drawn_with_a_marker(stopped_run):  # noqa: F811
    records = plot.read_metrics(stopped_run / "metrics.jsonl")
    assert [r["kind"] for r in records] == ["train"]
    ax_loss, ax_bleu = plot.curves_figure(records).axes
    (line,) = ax_loss.lines
    assert len(line.get_xdata()) == 1 and line.get_marker() not in ("None", None, "", " ")
    assert ax_loss.get_legend() is not None and ax_bleu.get_legend() is None   # no empty legend, no warning
    ax_loss, ax_bleu = plot.curves_figure([]).axes   # not even one record
    assert ax_loss.get_legend() is None and ax_loss.texts[0].get_text() == "no training record yet"


def test_bleu_labels_stay_clear_of_the_chrf_markers():
    # chrF a little above BLEU (the usual case, where the labels used to sit on the chrF markers), and once below
    records = [epoch(100, 10.0, 31.0), epoch(200, 35.0, 37.0), epoch(300, 40.0, 41.5), epoch(400, 44.0, 43.0)]
    fig = plot.curves_figure(records)
    fig.canvas.draw()
    ax = fig.axes[1]
    chrf = next(line for line in ax.lines if line.get_label() == "chrF")
    radius = chrf.get_markersize() / 2 * fig.dpi / 72
    markers = [ax.transData.transform(xy) for xy in chrf.get_xydata()]
    renderer = fig.canvas.get_renderer()
    labels = [text.get_window_extent(renderer) for text in ax.texts]
    assert len(labels) == len(records)
    for box in labels:
        for x, y in markers:
            overlaps = box.x0 < x + radius and x - radius < box.x1 and box.y0 < y + radius and y - radius < box.y1
            assert not overlaps, (box, (x, y))


def test_the_attention_maps_have_a_colour_bar(stopped_run):  # noqa: F811
    config = read_config(stopped_run)
    model = run_folder.load_model(stopped_run, config, "last")
    fig = plot.attention_figure(model, run_folder.load_tokenizer(stopped_run, config.settings), "the bird sings .")
    bars = {image.colorbar for ax in fig.axes for image in ax.images} - {None}
    assert len(bars) == 1
    (bar,) = bars
    assert bar.ax.get_ylabel() == "attention weight" and (bar.vmin, bar.vmax) == (0.0, 1.0)

