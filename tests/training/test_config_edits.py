"""A run folder's config.json edited by hand: values of the wrong type or range, missing keys, extra keys, a value
nested in a list or an object. `fit --resume`, `evaluate`, `translate` and `plot` either run correctly or stop with
one line naming the file, the key, the value and what was expected (exit status 2); never a traceback."""
import io
import json
import shutil
import tempfile
from pathlib import Path

import matplotlib
import pytest
from conftest import fit_argv, make_corpus, one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import run_cli
from train.cli.prog import PROG

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run folder after two steps of a very small Transformer (about a second), made once for the module."""
    base = tmp_path_factory.mktemp("edits")
    from train.__main__ import main
    assert main(fit_argv(make_corpus(base / "corpus"), base / "run", "--max-steps", "2")) == 0
    return base / "run"


def command(name, run_dir):
    """The argv of a command on a run folder, each as short as it can be (greedy decoding, one more step)."""
    return {"fit --resume": ["fit", "--resume", "--run-dir", str(run_dir), "--max-steps", "3"],
            "evaluate": ["evaluate", "--run-dir", str(run_dir), "--beam", "1"],
            "translate": ["translate", "--run-dir", str(run_dir), "--beam", "1"],
            "plot": ["plot", "--run-dir", str(run_dir)]}[name]


def run_edited(trained, name, edit, capsys):
    """(status, stdout, stderr) of a command on a copy of the trained run whose config.json `edit` changed."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as m:
        run_dir = Path(tmp) / "run"
        shutil.copytree(trained, run_dir)
        config = json.loads((run_dir / "config.json").read_text())
        (run_dir / "config.json").write_text(json.dumps(edit(config)))
        m.setattr("sys.stdin", io.StringIO("the red cat\n"))
        return run_cli(command(name, run_dir), capsys)


def replaced(path, value):
    """An edit that sets config[path[0]][path[1]]... to value."""
    def edit(config):
        inner = config
        for key in path[:-1]:
            inner = inner[key]
        inner[path[-1]] = value
        return config
    return edit


def removed(path):
    def edit(config):
        inner = config
        for key in path[:-1]:
            inner = inner[key]
        del inner[path[-1]]
        return config
    return edit


# the messages docs/design.md's failure table shows
@pytest.mark.parametrize("name", ["fit --resume", "evaluate", "translate", "plot"])
@pytest.mark.parametrize("edit, message", [
    (replaced(("settings", "lr"), "0.002"), 'settings.lr holds "0.002"; expected a positive number'),
    (replaced(("settings", "epochs"), [1]), "settings.epochs holds [1]; expected an integer >= 1"),
    (removed(("settings", "batch_tokens")), "settings.batch_tokens is missing (expected an integer >= 1)"),
    (replaced(("settings", "decoding", "beam"), 0), "settings.decoding.beam holds 0; expected an integer >= 1"),
    (replaced(("settings", "decoding"), "best"), 'settings.decoding holds "best"; expected an object with some of '
                                                 'checkpoint, beam, length_penalty'),
    (replaced(("settings", "decoding", "\x85"), 1), 'settings.decoding has the key "\\x85"; expected some of '
                                                   'checkpoint, beam, length_penalty'),   # a line break, escaped
    (replaced(("model_config", "d_ff"), "32"), "model_config: ModelConfig.d_ff must be an integer >= 1, got '32'"),
    (replaced(("blas_threads",), 4), "blas_threads holds 4; expected an object (or no such key: fit measures "
                                     "again)"),
])
def test_a_value_of_the_wrong_type_is_named_with_its_file_and_key(trained, name, edit, message, capsys):
    status, out, err = run_edited(trained, name, edit, capsys)
    assert status == 2
    line = one_line_error(err)
    assert line.startswith(f"{PROG} {name.split()[0]}: error: ") and line.endswith(f"config.json: {message}")


def test_keys_no_version_wrote_are_left_out_and_older_keys_migrated(trained, capsys):
    def edit(config):
        config["settings"]["colour"] = "blue"
        config["comment"] = {"by": "hand"}
        del config["settings"]["rdrop"]   # runs from before R-Drop trained without it
        return config
    status, out, err = run_edited(trained, "evaluate", edit, capsys)
    assert status == 0, err


@pytest.mark.parametrize("name, message", [
    ("evaluate", "settings.data_dir is missing, so the run's corpus folder is not known; give --src-file and "
                 "--ref-file"),
    ("plot", "settings.data_dir is missing, so the run's corpus folder is not known; give --sentence")])
def test_a_run_that_records_no_corpus_folder_says_what_to_give_instead(trained, name, message, capsys):
    status, out, err = run_edited(trained, name, removed(("settings", "data_dir")), capsys)
    assert status == 1
    assert one_line_error(err).endswith(f"config.json: {message}")


# ----- random edits: any JSON value anywhere, keys removed and added, values nested -----

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(["", "0.1", "12", "best", "lstm", "xs"])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=4)


def keys_of(config, prefix=()):
    """Every path to a value in config.json, nested objects included."""
    for key, value in config.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from keys_of(value, prefix + (key,))


@st.composite
def edits(draw, config):
    """(what was done, an edit of config.json): a value replaced by any JSON value, nested in a list or an object,
    turned into its string, a key removed, or a key added."""
    paths = sorted(keys_of(config))
    path = draw(st.sampled_from(paths))
    kind = draw(st.sampled_from(["replace", "nest in a list", "nest in an object", "as a string", "remove", "add"]))
    inner = config
    for key in path[:-1]:
        inner = inner[key]
    old = inner[path[-1]]
    if kind == "remove":
        return (kind, path), removed(path)
    if kind == "add":
        return (kind, path), replaced(path[:-1] + (draw(st.text(min_size=1, max_size=6)),), draw(JSON_VALUES))
    value = {"replace": lambda: draw(JSON_VALUES), "nest in a list": lambda: [old],
             "nest in an object": lambda: {"value": old}, "as a string": lambda: json.dumps(old)}[kind]()
    return (kind, path, value), replaced(path, value)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fit --resume", "evaluate", "translate", "plot"])
def test_a_randomly_edited_config_json_runs_or_gives_one_line(trained, name, capsys):
    config = json.loads((trained / "config.json").read_text())
    tried = []

    @settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(edits(config))
    def check(case):
        (what, edit) = case
        status, out, err = run_edited(trained, name, edit, capsys)   # a traceback fails the test here
        tried.append(what)
        if status != 0:
            line = one_line_error(err)
            assert line.startswith(f"{PROG} {name.split()[0]}: error: "), line
            if status == 2:   # a value fit would not have written: the file and one of the keys it sits under
                path = what[1]
                assert "config.json: " in line and any(str(key) in line for key in path), (what, line)
    check()
    print(f"{name}: {len(tried)} config.json edits tried")
