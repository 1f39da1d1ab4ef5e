"""Each run setting is declared once (train/run/settings.py SETTINGS): no setting's name in the files that derive the
presets, the stored settings, config.json's checks, older runs' defaults, resume's rules and fit's flags, apart from
the uses listed here; and a toy setting added as one declaration gets its flag, check, preset value and resume rule."""
import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from train.run.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
# the files that once each named every setting; now they derive from the declarations
PLUMBING = ("train/run/presets.py", "train/run/settings.py", "train/run/resolve.py", "train/run/config.py",
            "train/commands/fit.py")
# a setting's uses in those files: code that reads its value, which a declaration cannot say for it
USES = {
    ("src", "train/run/resolve.py"): "--extra-source must differ from --src and --tgt",
    ("tgt", "train/run/resolve.py"): "--extra-source must differ from --src and --tgt",
    ("extra_source", "train/run/resolve.py"): "--extra-source must differ from --src and --tgt",
    ("src", "train/commands/fit.py"): "the default run folder runs/PRESET-SRC-TGT",
    ("tgt", "train/commands/fit.py"): "the default run folder runs/PRESET-SRC-TGT",
    ("src", "train/run/config.py"): "the keys that make a file a run's config.json at all",
    ("tgt", "train/run/config.py"): "the keys that make a file a run's config.json at all",
    ("epochs", "train/run/resolve.py"): "whether a run has finished (continuable, existing_run_message)",
    ("max_steps", "train/run/resolve.py"): "whether a resumed run has steps left",
    ("data_dir", "train/commands/fit.py"): "--data-dir: where fit looks for the corpus",
    ("dropout", "train/run/presets.py"): "the presets' model sizes, from which the dropout's default comes",
}
# the preset and the model kind are what these files resolve: their subject, not one setting among others
SUBJECTS = ("preset", "model")


def docstrings(tree):
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def mentions(path, setting):
    """The lines of a file whose code names the setting: an attribute, a keyword argument, a string that is its name
    or holds its flag (docstrings, comments and the SETTINGS declaration itself left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "SETTINGS" for t in node.targets) for n in ast.walk(node)}
    skipped |= docstrings(tree)
    flag = re.compile(rf"{re.escape(setting.flag)}\b")
    return sorted({node.lineno for node in ast.walk(tree) if id(node) not in skipped and (
        (isinstance(node, ast.Attribute) and node.attr == setting.name)
        or (isinstance(node, ast.keyword) and node.arg == setting.name)
        or (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value == setting.name or flag.search(node.value))))})


def test_a_setting_is_named_only_in_its_declaration_and_its_uses():
    found = {(s.name, path): mentions(ROOT / path, s) for s in SETTINGS if s.name not in SUBJECTS
             for path in PLUMBING}
    found = {key: lines for key, lines in found.items() if lines}
    stray = {key: lines for key, lines in found.items() if key not in USES}
    assert not stray, f"settings named outside their declaration (file lines): {stray}"
    assert set(found) == set(USES), f"uses listed that no longer exist: {set(USES) - set(found)}"


def test_the_grep_finds_a_setting_named_in_the_plumbing(tmp_path):
    """The check above can fail: a file that names a setting the old way is caught."""
    old_way = tmp_path / "old.py"
    old_way.write_text('OVERRIDES = ("src", "lr")\np.add_argument("--warmup", type=int)\nx = settings.rdrop\n')
    by_name = {s.name: s for s in SETTINGS}
    assert [mentions(old_way, by_name[k]) for k in ("lr", "warmup", "rdrop", "epochs")] == [[1], [2], [3], []]


def test_every_preset_named_by_a_declaration_exists():
    from train.run.presets import PRESETS
    named = {name for s in SETTINGS for name in s.presets}
    assert named <= set(PRESETS), named - set(PRESETS)


TOY = ('    Setting("toy_knob", int, 3, NATURAL, "a toy setting: how many toys (default: the preset\'s: {presets})", '
       'presets={"demo": 5}, older=1),\n')


@pytest.fixture
def toy_setting():
    """The train package imported afresh with one more declaration in SETTINGS (and nothing else changed)."""
    saved = {k: v for k, v in sys.modules.items() if k == "train" or k.startswith("train.")}
    for k in saved:
        del sys.modules[k]
    path = ROOT / "train" / "run" / "settings.py"
    source = path.read_text(encoding="utf-8")
    assert source.count("SETTINGS = (\n") == 1
    import train.run  # noqa: F401 (the package, before its settings module is put in place)
    spec = importlib.util.spec_from_file_location("train.run.settings", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["train.run.settings"] = module
    exec(compile(source.replace("SETTINGS = (\n", "SETTINGS = (\n" + TOY), str(path), "exec"), module.__dict__)
    try:
        yield module
    finally:
        for k in [k for k in sys.modules if k == "train" or k.startswith("train.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_a_toy_setting_is_one_declaration(toy_setting, tmp_path, capsys):
    from train.__main__ import build_parser
    from train.cli.errors import TrainError
    from train.run import resolve
    from train.run.config import RunConfig, read_config, write_config
    from train.run.presets import PRESETS
    assert PRESETS["demo"].toy_knob == 5 and PRESETS["tiny"].toy_knob == 3   # each preset's value
    parser = build_parser()
    help_text = " ".join(parser._subparsers._group_actions[0].choices["fit"].format_help().split())
    assert "--toy-knob TOY_KNOB a toy setting: how many toys (default: the preset's: demo 5, tiny 3" in help_text

    def resolved(*flags, run_dir=tmp_path / "run"):
        args = parser.parse_args(["fit", "--preset", "tiny", "--run-dir", str(run_dir), *flags])
        return resolve.resolve_settings(args, run_dir)
    assert resolved().settings.toy_knob == 3
    settings = resolved("--toy-knob", "7").settings
    assert settings.toy_knob == 7 and settings.to_dict()["toy_knob"] == 7   # stored in config.json
    with pytest.raises(SystemExit):   # its range, from its check: an argparse error
        parser.parse_args(["fit", "--preset", "tiny", "--toy-knob", "-1"])
    assert "argument --toy-knob: expected an integer >= 0, got -1" in capsys.readouterr().err

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_config(run_dir, RunConfig(settings, {"vocab_size": 8, **PRESETS["tiny"].model}))
    assert read_config(run_dir).settings.toy_knob == 7
    resumed = read_config(run_dir)
    with pytest.raises(TrainError, match="--resume: --toy-knob 8 differs from the run's 7; a resumed run keeps"):
        resolve.resumed_settings(resumed, PRESETS["tiny"], {"toy_knob": 8}, {}, run_dir)
    assert resolve.resumed_settings(resumed, PRESETS["tiny"], {"toy_knob": 7}, {}, run_dir).toy_knob == 7

    stored = json.loads((run_dir / "config.json").read_text())
    stored["settings"]["toy_knob"] = "many"   # config.json's check
    (run_dir / "config.json").write_text(json.dumps(stored))
    with pytest.raises(TrainError, match=r'settings\.toy_knob holds "many"; expected an integer >= 0'):
        read_config(run_dir)
    del stored["settings"]["toy_knob"]   # a run from before the setting: the value it trained with
    (run_dir / "config.json").write_text(json.dumps(stored))
    assert read_config(run_dir).settings.toy_knob == 1


def kind_branches(path):
    """The lines of a file that compare something with a model kind's name (`kind == "transformer"`)."""
    from transformer.registry import MODELS
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
                   and any(isinstance(x, ast.Constant) and x.value in MODELS for x in [node.left, *node.comparators])})


def test_train_asks_the_registry_about_model_kinds_instead_of_branching_on_their_names(tmp_path):
    branches = {str(p.relative_to(ROOT)): kind_branches(p) for p in sorted((ROOT / "train").rglob("*.py"))}
    assert not {p: lines for p, lines in branches.items() if lines}
    branching = tmp_path / "branching.py"
    branching.write_text('fields = SIZES["transformer" if kind == "transformer" else "lstm"]\n')
    assert kind_branches(branching) == [1]   # the check can fail
