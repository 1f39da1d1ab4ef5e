"""The docs and the code say the same: every fused op has its derivation in docs/backprop.md, under its class name,
with the names its code uses; the docstrings point to their sections; links in the docs lead to files that exist."""
import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt
from minitorch.core import reference_of
from tests.graph_ops import ops_of
import minitorch.functional as F
import minitorch.fused as fused_package
from minitorch.tools import bench_ops
from minitorch.autograd import Function
from minitorch.fused import composed
from minitorch.tools.graph_memory import saved_bytes

ROOT = Path(__file__).resolve().parents[1]
BACKPROP = (ROOT / "docs" / "backprop.md").read_text()
SECTIONS = dict(re.findall(r"^## (\d+)\. .*\(`(\w+)`\)$", BACKPROP, re.M))   # number -> class name

# the names each derivation uses for the op's quantities: each must also be a variable of the op's code
NAMES = {"Softmax": ["y", "dx"], "LogSoftmax": ["p", "dx"], "CrossEntropy": ["E", "S", "z_sum", "s", "dx"],
         "LayerNorm": ["xhat", "rstd", "gh", "dw", "db", "dx"],
         "ScaledDotProductAttention": ["s", "w", "a", "da", "dw", "ds", "dq", "dk", "dv", "keep", "dropout_p", "scale",
                                       "dropout_scale"],
         "LSTMCellFunction": ["gh", "gc", "dc", "c_prev", "tanh_c"]}


def fused_functions():
    import pkgutil
    import importlib
    found = {}
    for info in pkgutil.iter_modules(fused_package.__path__):
        module = importlib.import_module(f"minitorch.fused.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, Function) and obj.__module__ == module.__name__:
                found[name] = obj
    return found


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen"]


def stated_numbers(pattern, text=BACKPROP):
    """The numbers the doc states where `pattern` (a regex whose group 1 is a number, in digits or as a word) matches,
    its lines joined: a fact read from the doc, whatever the sentence around it says."""
    found = re.findall(pattern, " ".join(text.split()))
    assert found, f"the doc states no number for {pattern!r}"
    return [NUMBER_WORDS.index(n.lower()) if n.lower() in NUMBER_WORDS else float(n.replace(",", "")) for n in found]


def paragraph_with(words, text=BACKPROP):
    """The paragraph of the doc that holds every one of words (names, symbols), or None."""
    return next((p for p in text.split("\n\n") if all(w in " ".join(p.split()) for w in words)), None)


def section_text(number):
    start = BACKPROP.index(f"\n## {number}. ")
    end = BACKPROP.find("\n## ", start + 1)
    return BACKPROP[start:end]


def test_every_fused_function_has_a_section_and_the_sections_name_real_functions():
    functions = fused_functions()
    assert set(SECTIONS.values()) | {"LogSoftmax"} == set(functions), (SECTIONS, sorted(functions))
    assert set(stated_numbers(r"\b(\w+) fused ops")) == {len(SECTIONS)}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_docstring_points_to_the_section_and_both_use_the_codes_names(name):
    cls = fused_functions()[name]
    number = re.search(r"docs/backprop\.md section (\d)", cls.__doc__)
    assert number, f"{name}'s docstring does not name its section of docs/backprop.md"
    text = section_text(number.group(1))
    assert f"`{name}`" in text or name == "LogSoftmax" and "`LogSoftmax`" in text
    source = inspect.getsource(cls)
    for var in NAMES[name]:
        assert re.search(rf"\b{var}\b", text), f"docs/backprop.md section {number.group(1)} does not use {var!r}"
        assert re.search(rf"\b{var}\b\s*(=|,[^=]*=)|\bfor {var}\b|\b{var}\b\s*\*=|def \w+\([^)]*\b{var}\b", source), \
            f"{name}'s code has no variable {var!r}, which its derivation uses"


def test_links_in_the_docs_lead_to_files_that_exist():
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if target.startswith("http"):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to {target}, which is missing"


def github_anchor(heading):
    """The id GitHub gives a markdown heading: lowercased, punctuation but - and _ dropped, spaces -> -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_anchors_in_the_docs_name_headings_that_exist():
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#]*)#([^)]+)\)", doc.read_text()):
            if target.startswith("http"):
                continue
            text = (doc.parent / target if target else doc).read_text()
            anchors = {github_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
            assert anchor in anchors, f"{doc.relative_to(ROOT)} links to {target}#{anchor}, a heading not there"


# ----- the claims of docs/backprop.md about bytes, nodes and numbers, measured -----

def _nodes(out):
    """The ops in the graph of `out`, each once."""
    return sorted(reference_of(type(op)).__name__ for op in ops_of(out))   # a kernel by its op's name


def _leaf(rng, *shape):
    return mt.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


def test_bench_ops_times_each_fused_function_this_doc_derives():
    """The doc says bench_ops times each of the six fused ops: each bench case runs one of them, and all are run."""
    derived = set(SECTIONS.values()) | {"LogSoftmax"}
    timed = [set(_nodes(call(bench_ops.FUSED, make()))) & derived
             for _, _, make, call in bench_ops.cases(2, 2, 4, 8, 10, "float32", "cpu")]
    assert all(len(found) == 1 for found in timed) and set().union(*timed) == derived == set(fused_functions())
    assert set(stated_numbers(r"\b(\w+) fused ops")) == {len(SECTIONS)}


def test_the_byte_figures_of_backprop_md():
    rng = np.random.default_rng(0)
    n, c = 4, 8000
    unit = n * c * 4  # one (N, C) float32 array
    x = _leaf(rng, n, c)
    target = rng.integers(0, c, n)
    # softmax and log-softmax: the composed forms keep one array of x's size and a row of sums, as the fused ones
    for name in ("softmax", "log_softmax"):
        fused_bytes, composed_bytes = (saved_bytes(getattr(m, name)(x, dim=-1)) for m in (F, composed))
        assert fused_bytes == unit and composed_bytes == unit + n * 4, name
    # cross-entropy: E and S against two (N, C) arrays (exp(z) and the soft target): 2.0 times at 8,000 classes
    fused_ce = saved_bytes(F.cross_entropy(x, target, label_smoothing=0.1))
    composed_ce = saved_bytes(composed.cross_entropy(x, target, label_smoothing=0.1))
    assert unit <= fused_ce < unit + 64 * n and 2 * unit <= composed_ce < 2 * unit + 64 * n  # + per-row numbers
    assert stated_numbers(r"([\d.]+) times the bytes") == [round(composed_ce / fused_ce, 1)]
    assert stated_numbers(r"vocabulary of ([\d,]+)") == [c]
    # attention: beyond q, k, v and the mask, one (.., Tq, Tk) float32 array (w, kept for speed) and a quarter of
    # one more with dropout (the bool keep); composed about 2
    b, h, t, d = 2, 4, 16, 8
    mask = np.ones((b, 1, 1, t), bool)
    mask[0, ..., 10:] = False
    scores = b * h * t * t * 4
    in_mask = mask.nbytes / scores
    for p, fused_arrays, composed_arrays in ((0.0, 1 + in_mask, 2.1), (0.1, 1.25 + in_mask, 2.35)):
        found = []
        for op in (F.scaled_dot_product_attention, composed.scaled_dot_product_attention):
            q, k, v = (_leaf(rng, b, h, t, d) for _ in range(3))
            mt.manual_seed(0)
            found.append((saved_bytes(op(q, k, v, mask, dropout_p=p, training=True)) - 3 * q.data.nbytes) / scores)
        assert found[0] == fused_arrays and 2.0 <= found[1] < composed_arrays, (p, found)


def test_the_lstm_cell_fused_saves_five_arrays_composed_six_and_they_walk_1_node_against_13():
    rng = np.random.default_rng(0)
    n, h = 64, 256
    results = {}
    for name, op in (("fused", F.lstm_cell), ("composed", composed.lstm_cell)):
        out = mt.cat(list(op(_leaf(rng, n, 4 * h), _leaf(rng, n, h))), dim=-1)
        results[name] = (saved_bytes(out) / (n * h * 4), _nodes(out))
    assert results["fused"][0] == 5.0 and results["composed"][0] == 6.0   # gates (4H) and c_prev; six activations
    assert results["fused"][1] == ["Cat", "LSTMCellFunction", "Output", "Output"]   # two outputs, h and c
    composed_ops = [op for op in results["composed"][1] if op != "Cat"]
    assert len(composed_ops) == 13 and composed_ops.count("GetItem") == 4 and composed_ops.count("Sigmoid") == 3 \
        and composed_ops.count("Tanh") == 2 and composed_ops.count("Mul") == 3 and composed_ops.count("Add") == 1
    assert stated_numbers(r"(\w+) \(N, H\) arrays") == [results["fused"][0], results["composed"][0]]
    assert stated_numbers(r"instead of (\d+)") == [len(composed_ops)]


def test_softmax_composed_walks_four_nodes():
    x = mt.tensor(np.ones((2, 3)), requires_grad=True)
    assert _nodes(composed.softmax(x)) == ["Div", "Exp", "Sub", "Sum"]
    assert stated_numbers(r"walks (\w+) nodes") == [4]


def test_layer_norms_gradient_loses_the_mean_exactly_and_the_xhat_direction_only_as_eps_goes_to_0():
    rng = np.random.default_rng(0)
    x_np, g_np, weight = rng.standard_normal((3, 6)), rng.standard_normal((3, 6)), rng.standard_normal(6)
    for eps, small in ((1e-1, False), (1e-5, False), (0.0, True)):
        x = mt.tensor(x_np, dtype=mt.float64, requires_grad=True)
        F.layer_norm(x, 6, mt.tensor(weight, dtype=mt.float64), eps=eps).backward(mt.tensor(g_np, dtype=mt.float64))
        dx = x.grad.numpy()
        var = x_np.var(axis=1, keepdims=True)
        rstd = 1 / np.sqrt(var + eps)
        xhat = (x_np - x_np.mean(axis=1, keepdims=True)) * rstd
        gh = g_np * weight
        np.testing.assert_allclose(dx.sum(axis=1), 0, atol=1e-12)   # no component along the ones vector
        along_xhat = (dx * xhat).sum(axis=1)
        expected = rstd[:, 0] * (gh * xhat).mean(axis=1) * 6 * eps / (var[:, 0] + eps)   # the doc's formula
        np.testing.assert_allclose(along_xhat, expected, rtol=1e-9, atol=1e-13)
        assert (np.abs(along_xhat) < 1e-12).all() == small, (eps, along_xhat)
    assert paragraph_with(["`xhat`", "`eps -> 0`"]), "the doc says where the xhat direction goes"


def test_a_fully_masked_row_under_second_order_gives_finite_gradients_in_attention_and_softmax():
    rng = np.random.default_rng(0)
    q, k, v = (mt.tensor(rng.standard_normal((3, 2)), dtype=mt.float64, requires_grad=True) for _ in range(3))
    mask = np.array([[True, False, True], [False, False, False], [True, True, False]])
    out = F.scaled_dot_product_attention(q, k, v, mask)
    first = mt.grad((out * out).sum(), [q, k, v], create_graph=True)
    second = mt.grad(sum((g * g).sum() for g in first), [q, k, v])
    assert all(np.isfinite(g.numpy()).all() for g in first + second)
    np.testing.assert_array_equal(first[0].numpy()[1], 0.0)
    x = mt.tensor(np.array([[0.0, 1.0, 2.0], [-np.inf] * 3]), dtype=mt.float64, requires_grad=True)
    w = mt.tensor(rng.standard_normal((2, 3)), dtype=mt.float64)
    with np.errstate(invalid="ignore"):   # log-softmax's -inf row times w sums to nan: the loss, not the gradient
        for op in (F.softmax, F.log_softmax):
            fast, = mt.grad((op(x, dim=-1) * w).sum(), x)
            recorded, = mt.grad((op(x, dim=-1) * w).sum(), x, create_graph=True)
            assert np.isfinite(fast.numpy()).all() and np.isfinite(recorded.numpy()).all(), op.__name__
            np.testing.assert_allclose(recorded.numpy(), fast.numpy(), rtol=1e-12, atol=1e-12)
    assert paragraph_with(["fully masked", "softmax", "`-inf`", "zeros"]), "the doc says what a fully masked row gives"


def test_a_key_shared_by_every_head_gets_the_sum_of_the_heads_gradients():
    rng = np.random.default_rng(0)
    b, heads, t, d = 2, 3, 4, 5
    q_np, k_np, v_np, g_np = (rng.standard_normal(s) for s in ((b, heads, t, d), (b, 1, t, d), (b, 1, t, d),
                                                                  (b, heads, t, d)))
    shared = [mt.tensor(a, dtype=mt.float64, requires_grad=True) for a in (q_np, k_np, v_np)]
    F.scaled_dot_product_attention(*shared).backward(mt.tensor(g_np, dtype=mt.float64))
    copied = [mt.tensor(a, dtype=mt.float64, requires_grad=True)
              for a in (q_np, np.repeat(k_np, heads, axis=1), np.repeat(v_np, heads, axis=1))]
    F.scaled_dot_product_attention(*copied).backward(mt.tensor(g_np, dtype=mt.float64))
    for one, per_head in zip(shared[1:], copied[1:]):  # the head dim summed back by unbroadcast
        np.testing.assert_allclose(one.grad.numpy(), per_head.grad.numpy().sum(axis=1, keepdims=True), rtol=1e-12)
    assert paragraph_with(["`unbroadcast`", "`dk`", "(B, 1, Tk, d)"]), "the doc names who sums the heads' dk"


# ----- the CLI's help states the defaults the code and the presets use -----
def cli_options():
    """(command, option, action) for every option of every `python -m train` command and experiment."""
    import argparse
    from train.__main__ import build_parser
    pending = [build_parser()]
    while pending:
        parser = pending.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += list(action.choices.values())
            elif action.option_strings:
                yield parser.prog.split(" -m train ")[-1], action.option_strings[-1], action


def help_of(command, option):
    return next(" ".join(a.help.split()) for c, o, a in cli_options() if (c, o) == (command, option))


def test_a_stated_number_default_is_the_options_default():
    """"(default 32)", "(default: 2,6,12)": the same value as argparse's default, where the option has one."""
    checked = 0
    for command, option, action in cli_options():
        stated = re.search(r"\(default:? ([\d.,]+)\)", action.help or "")
        if stated and action.default is not None:
            value = action.default if isinstance(action.default, list) else [action.default]
            assert stated.group(1).split(",") == [str(v) for v in value], (command, option, action.help)
            checked += 1
    assert checked >= 8


def default_clause(command, option):
    """The "(default...)" part of an option's help: where it states its default, however worded."""
    clause = re.search(r"\(default:? (.*)\)", help_of(command, option))
    assert clause, f"{command} {option}: the help states no default"
    return clause.group(1)


def numbers_in(text):
    """The numbers text states ("2,000", "0.6", "5"), as numbers: facts, whatever the words around them."""
    return [float(n.replace(",", "")) for n in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])", text)]


def test_the_help_states_the_presets_settings():
    from train.run.presets import DECODING, PRESETS
    from train.run.resolve import fit_defaults
    stated = dict(re.findall(r"\b(\w+) (\d[\d,]*)", default_clause("fit", "--vocab-size")))
    assert {name: int(n.replace(",", "")) for name, n in stated.items()} == \
        {name: p.vocab_size for name, p in PRESETS.items()}
    assert numbers_in(default_clause("fit", "--seed")) == [fit_defaults(PRESETS["tiny"]).seed]
    choices = next(a.choices for c, o, a in cli_options() if (c, o) == ("evaluate", "--checkpoint"))
    for command in ("evaluate", "translate"):   # a run from before presets chose its decoding uses DECODING
        assert numbers_in(default_clause(command, "--beam")) == [DECODING["beam"]]
        assert numbers_in(default_clause(command, "--length-penalty")) == [DECODING["length_penalty"]]
        named = [w for w in re.findall(r"\w+", default_clause(command, "--checkpoint")) if w in choices]
        assert named == [DECODING["checkpoint"], "last"]   # the fallback: a run without one reads `last`
    from train.commands.bench import SEQ_LEN   # the bench's batch: batch tokens / SEQ_LEN sentences
    assert numbers_in(default_clause("bench", "--batch-size")) == [SEQ_LEN, PRESETS["small"].batch_tokens // SEQ_LEN]
    memory = next(a for c, o, a in cli_options() if (c, o) == ("experiment memory", "--preset"))
    assert re.findall(r"\w+", default_clause("experiment memory", "--preset"))[0] == memory.default
    assert numbers_in(default_clause("experiment memory", "--preset")) == [PRESETS[memory.default].model["d_model"]]


def test_the_readme_states_the_small_presets_recipe_and_decoding():
    from train.run.presets import PRESETS
    small, d = PRESETS["small"], PRESETS["small"].decoding
    number = r"(\d[\d,]*(?:\.\d+)?(?:e-\d+)?)"
    recipe = re.search(rf"BPE .*?length penalty {number}", " ".join((ROOT / "README.md").read_text().split())).group(0)
    assert stated_numbers(rf"BPE {number}", recipe) == [small.vocab_size]
    assert stated_numbers(rf"learning rate of {number}", recipe) == [small.lr]
    assert stated_numbers(rf"dropout {number}", recipe) == [small.model["dropout"]]
    assert stated_numbers(rf"{number} epochs", recipe) == [small.epochs, small.avg_last]
    assert stated_numbers(rf"beam {number}", recipe) == [d["beam"]]
    assert stated_numbers(rf"length penalty {number}", recipe) == [d["length_penalty"]]
    assert d["checkpoint"] == "avg" and paragraph_with(["`avg`", "`small`", "`best`"], (ROOT / "README.md").read_text())
    assert all(p.decoding["checkpoint"] == "best" for name, p in PRESETS.items() if name != "small")


# docs/design.md's reading set (the functions one op enters): tests/test_reading_set.py


# ----- docs/differences.md: each row's claims, executed -----
DIFFERENCES = (ROOT / "docs" / "differences.md").read_text()


def _torch():
    """PyTorch where it is installed (the PyTorch column is checked then), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _raises(error, fn):
    try:
        fn()
    except error:
        return True
    return False


def _difference_1(torch):
    assert mt.tensor(np.zeros(3)).dtype == mt.float32 and mt.tensor(np.float64(1.5)).dtype == mt.float32
    assert mt.tensor(np.zeros(3), dtype=mt.float64).dtype == mt.float64
    assert mt.from_numpy(np.zeros(3)).dtype == mt.float64
    if torch:
        assert torch.tensor(np.zeros(3)).dtype == torch.float64


def _difference_2(torch):
    assert (mt.tensor([1, 2]) * 1.5).dtype == mt.float32 and (mt.tensor([1, 2]) / 2).dtype == mt.float32
    assert (mt.tensor([1, 2], dtype=np.int32) + mt.tensor([1], dtype=np.uint8)).dtype == np.int32
    assert not any(hasattr(mt, name) for name in ("bfloat16", "complex64"))
    half = mt.tensor([1.0], dtype=mt.float16)
    assert (half * 2.5).dtype == mt.float16 and (half * mt.tensor([1.0])).dtype == mt.float32
    if torch:
        assert (torch.tensor([1, 2]) * 1.5).dtype == (torch.tensor([1, 2]) / 2).dtype == torch.float32
        assert (torch.tensor([1.0], dtype=torch.float16) * 2.5).dtype == torch.float16


def _difference_3(torch):
    assert mt.tensor([1.5]).dtype == mt.float32 and mt.randn(2).dtype == mt.float32
    assert not hasattr(mt, "set_default_dtype")
    if torch:
        assert hasattr(torch, "set_default_dtype")


def _difference_4(torch):
    leaf = mt.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda t: t.mul_(2), lambda t: t.add_(1), lambda t: t.fill_(0)):
        assert _raises(RuntimeError, lambda: op(leaf))                 # a leaf: refused, as PyTorch
    inner = leaf * 2
    view = inner.reshape(2)
    inner.zero_()                                                      # recorded
    inner.mul_(3)
    inner.sum().backward()
    assert leaf.grad.tolist() == [0.0, 0.0]
    assert _raises(RuntimeError, lambda: view.sum().backward())        # a view from before the change
    with mt.no_grad():
        leaf.mul_(2)
    np.testing.assert_array_equal(leaf.numpy(), [2.0, 4.0])
    if torch:
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        assert _raises(RuntimeError, lambda: t.mul_(2))
        inner = t * 2
        view = inner.reshape(2)
        inner.zero_()   # recorded too
        inner.mul_(3)
        (inner.sum() + view.sum()).backward()   # the view's graph is rebuilt: its gradient is the new value's
        assert t.grad.tolist() == [0.0, 0.0]


def _difference_5(torch):
    x = np.linspace(-3, 3, 13)
    got = F.gelu(mt.tensor(x, dtype=mt.float64)).numpy()
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    erf_form = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(got, tanh_form, rtol=1e-12, atol=1e-12)
    assert np.abs(got - erf_form).max() > 1e-5   # the two forms differ by about 1e-4 near |x| = 2
    if torch:
        exact = torch.nn.functional.gelu(torch.tensor(x)).numpy()
        np.testing.assert_allclose(exact, erf_form, rtol=1e-12, atol=1e-12)


def _difference_6(torch):
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.npz"
        mt.save({"w": mt.tensor([1.0, 2.0])}, path)
        with np.load(path, allow_pickle=False) as stored:   # no pickle inside, or this raises
            arrays = [stored[k].tolist() for k in stored.files]
        assert [1.0, 2.0] in arrays and all(isinstance(a, list) for a in arrays)   # arrays, no objects
        assert mt.load(path)["w"].numpy().tolist() == [1.0, 2.0]
        assert mt.load(path, weights_only=True, map_location="cpu")["w"].numpy().tolist() == [1.0, 2.0]
        assert _raises(ValueError, lambda: mt.load(path, weights_only=False))
        import io
        buffer = io.BytesIO()
        mt.save({"w": mt.tensor([1.0, 2.0])}, buffer)
        buffer.seek(0)
        assert mt.load(buffer)["w"].tolist() == [1.0, 2.0]
        if torch:
            import zipfile
            torch.save({"w": torch.tensor([1.0, 2.0])}, Path(folder) / "state.pt")
            assert any(n.endswith("data.pkl") for n in zipfile.ZipFile(Path(folder) / "state.pt").namelist())
            assert _raises(ValueError, lambda: mt.load(Path(folder) / "state.pt"))


def _difference_7(torch):
    assert all(hasattr(mt, name) for name in ("float32", "float64", "float16", "half", "int64", "bool_", "autocast"))
    assert not hasattr(mt, "bfloat16")
    mt.manual_seed(0)
    model = mt.nn.Sequential(mt.nn.Embedding(5, 4), mt.nn.LayerNorm(4), mt.nn.Linear(4, 3))
    flat = mt.nn.utils.FlatParameters(model)
    flat.zero_grad()
    with mt.autocast("cpu"):
        h = model[0](np.array([1, 3]))
        y = model[2](model[1](h))
        loss = mt.nn.functional.cross_entropy(y, np.array([0, 1]))
    assert h.dtype == y.dtype == mt.float16 and loss.dtype == mt.float32
    loss.backward()
    assert model[0].weight.grad is None                      # in the float16 copy's leaf until settled
    flat.settle()
    assert model[0].weight.grad.dtype == mt.float32
    assert isinstance(mt.amp.GradScaler("cpu").get_scale(), float)
    if torch:
        assert all(hasattr(torch, name) for name in ("float16", "bfloat16", "autocast"))
        t_model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 3))
        with torch.autocast("cpu", dtype=torch.float16):
            t_h = t_model[0](torch.tensor([1, 3]))
            t_y = t_model[2](t_model[1](t_h))
        assert t_h.dtype == torch.float32 and t_y.dtype == torch.float16
        t_y.float().sum().backward()
        assert t_model[2].weight.grad is not None


def _difference_8(torch):
    x = mt.tensor([1.0])
    assert x.to("cpu").device == "cpu" and _raises(ValueError, lambda: x.to("mps"))
    assert mt.backends.mps.is_available() is False and _raises(RuntimeError, lambda: mt.device("mps"))
    assert x.to("meta").device == "meta" and _raises(ValueError, lambda: x.to("xpu"))
    if torch:
        assert [torch.device(name).type for name in ("mps", "xpu", "meta")] == ["mps", "xpu", "meta"]


def _difference_9(torch):
    from minitorch.utils import data
    assert not any(hasattr(mt, name) for name in ("compile", "jit", "sparse"))
    assert all(hasattr(data, name) for name in ("Dataset", "TensorDataset", "Subset", "random_split", "DataLoader"))
    assert all(hasattr(data, name) for name in ("SequentialSampler", "RandomSampler", "SubsetRandomSampler",
                                                "BatchSampler"))
    ds = data.TensorDataset(mt.arange(4))
    import multiprocessing
    before = len(multiprocessing.active_children())
    loader = data.DataLoader(ds, batch_size=2, num_workers=2, pin_memory=True)
    assert [b.tolist() for (b,) in loader] == [[0, 1], [2, 3]]
    assert len(multiprocessing.active_children()) == before   # no worker started
    assert not any(hasattr(data, name) for name in ("IterableDataset", "WeightedRandomSampler", "DistributedSampler"))
    parts = ("Transformer", "TransformerEncoder", "TransformerEncoderLayer", "TransformerDecoder",
             "TransformerDecoderLayer", "MultiheadAttention")
    assert not any(hasattr(mt.nn, name) for name in parts)
    with pytest.raises(NotImplementedError, match="strong_wolfe"):
        mt.optim.LBFGS([mt.zeros(1, requires_grad=True)], line_search_fn="strong_wolfe")
    if torch:
        assert all(hasattr(torch.nn, name) for name in parts)
        torch.optim.LBFGS([torch.zeros(1, requires_grad=True)], line_search_fn="strong_wolfe")
        assert all(hasattr(torch, name) for name in ("compile", "jit", "sparse"))
        import torch.utils.data
        assert all(hasattr(torch.utils.data, name) for name in ("IterableDataset", "WeightedRandomSampler",
                                                                "DistributedSampler"))


def _difference_10(torch):
    assert _raises(NotImplementedError, lambda: mt.nn.Conv2d(4, 4, 3, groups=2))
    assert _raises(ValueError, lambda: mt.nn.Conv2d(4, 4, 3, padding="same"))
    assert _raises(TypeError, lambda: mt.nn.MaxPool2d(2, ceil_mode=True))
    assert not any(hasattr(mt.nn, name) for name in ("Conv1d", "Conv3d", "ConvTranspose2d", "BatchNorm2d"))
    if torch:
        torch.nn.Conv2d(4, 4, 3, groups=2, padding="same")
        torch.nn.MaxPool2d(2, ceil_mode=True)
        assert all(hasattr(torch.nn, name) for name in ("Conv1d", "Conv3d", "ConvTranspose2d", "BatchNorm2d"))


def _difference_11(torch):
    x = mt.tensor([0.0, 1.0])
    assert x.type() == "float32" and x.type(mt.float64).dtype == np.float64
    if torch:
        assert torch.tensor([0.0, 1.0]).type() == "torch.FloatTensor"


def _difference_12(torch):
    mt.manual_seed(0)
    ours = mt.randn(3, dtype=mt.float64).numpy()
    mt.manual_seed(0)
    np.testing.assert_array_equal(ours, mt.randn(3, dtype=mt.float64).numpy())   # reproducible in itself
    assert _raises(ValueError, lambda: mt.Generator(device="cuda"))
    if torch:
        torch.manual_seed(0)
        assert not np.allclose(ours, torch.randn(3, dtype=torch.float64).numpy())


def _difference_13(torch):
    assert mt.device("cuda:0") == "cuda" and isinstance(mt.device("cpu"), str) and mt.zeros(1).device == "cpu"
    assert mt.device("cuda:0").type == "cuda" and mt.device("cuda:0").index == 0
    assert not hasattr(mt.zeros(1).device, "type")
    if torch:
        assert torch.device("cuda:0").type == "cuda" and torch.device("cuda:0").index == 0
        assert torch.zeros(1).device.type == "cpu"


def _difference_14(torch):
    p = mt.nn.Parameter(mt.ones(2))
    opt = mt.optim.Adam([p])
    p.grad = mt.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert opt.state[p] is opt.state[0] and sd["state"][0]["step"] == 1 and isinstance(sd["state"][0]["step"], int)
    assert sorted(sd) == ["param_groups", "state"] and "foreach" not in sd["param_groups"][0]
    assert "maximize" not in sd["param_groups"][0] and mt.optim.Adamax([p]).param_groups[0]["maximize"] is False
    if torch:
        q = torch.nn.Parameter(torch.ones(2))
        theirs = torch.optim.Adam([q])
        q.grad = torch.ones(2)
        theirs.step()
        assert torch.is_tensor(theirs.state_dict()["state"][0]["step"]) and "foreach" in theirs.param_groups[0]


def _difference_15(torch):
    lstm = mt.nn.LSTM(2, 3, num_layers=2, bidirectional=True)
    assert [n for n, _ in lstm.named_parameters()][:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                                           "bias_hh_l0"]
    assert _raises(TypeError, lambda: mt.nn.LSTM(2, 3, proj_size=1))
    rnn = mt.nn.RNN(2, 3, 2, "relu")
    assert [n for n, _ in rnn.named_parameters()][4:6] == ["weight_ih_l1", "weight_hh_l1"]
    assert _raises(ValueError, lambda: mt.nn.RNNCell(2, 3, nonlinearity="sigmoid"))
    assert [n for n, _ in mt.nn.LSTMCell(2, 3).named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    if torch:
        torch.nn.LSTM(2, 3, proj_size=1)
        cell = torch.nn.RNNCell(2, 3, nonlinearity="sigmoid")   # made; refused when called
        assert _raises(RuntimeError, lambda: cell(torch.zeros(1, 2)))
        assert [n for n, _ in torch.nn.LSTMCell(2, 3).named_parameters()] == ["weight_ih", "weight_hh", "bias_ih",
                                                                             "bias_hh"]


def _difference_16(torch):
    assert _raises(RuntimeError, lambda: mt.exp(mt.zeros(2), out=mt.zeros(3)))
    out = mt.zeros(2)
    assert mt.exp(mt.zeros(2), out=out) is out and out.tolist() == [1.0, 1.0]
    if torch:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert torch.exp(torch.zeros(2), out=torch.zeros(3)).shape == (2,)


def _difference_17(torch):
    assert isinstance(mt.ones(2).data, np.ndarray) and not hasattr(mt.ones(2).data, "sub_")
    if torch:
        assert torch.is_tensor(torch.ones(2).data)


def _difference_18(torch):
    x, cond = mt.ones(2, requires_grad=True), mt.tensor([True, False])
    assert len(mt.where(cond, x, 2.0 * x).grad_fn.next_functions) == 3
    assert (2 * x).grad_fn.next_functions[0] == (None, 0) and (x * 2).grad_fn.next_functions[1] == (None, 0)
    assert x.max(0).values.grad_fn.name() == "ReshapeBackward0" and (x * x).grad_fn.name() == "MulBackward0"
    loss = (x * 2).sum()
    loss.backward()
    assert loss.grad_fn.next_functions == ()
    if torch:
        y = torch.ones(2, requires_grad=True)
        assert len(torch.where(torch.tensor([True, False]), y, 2.0 * y).grad_fn.next_functions) == 2
        assert (2 * y).grad_fn.next_functions[1] == (None, 0)
        assert y.max(0).values.grad_fn.name() == "MaxBackward0" and (y * y).grad_fn.name() == "MulBackward0"
        loss = (y * 2).sum()
        loss.backward()
        assert loss.grad_fn.next_functions[0][0].name() == "MulBackward0"


def _difference_19(torch):
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        assert _raises(TypeError, lambda: mt.save(mt.nn.Linear(2, 2), Path(folder) / "model.pth"))
        if torch:
            torch.save(torch.nn.Linear(2, 2), Path(folder) / "theirs.pth")
            assert isinstance(torch.load(Path(folder) / "theirs.pth", weights_only=False), torch.nn.Linear)


def test_each_row_of_differences_md_holds():
    rows = re.findall(r"^\| (\d+) \|", DIFFERENCES, re.M)
    checks = {name.rsplit("_", 1)[1]: fn for name, fn in globals().items() if name.startswith("_difference_")}
    assert rows == sorted(checks, key=int), "each row of docs/differences.md has its check here, and only those"
    torch = _torch()
    for row in rows:
        checks[row](torch)



def test_the_readmes_test_command_is_what_ci_runs():
    """The README's test command is a line of .ci/run, character for character, and it installs the dev extra and
    PyTorch (the reference extra), so that the comparisons with PyTorch run in CI rather than skip; what .ci/run runs
    after it is a script the README links (the engine's tests on a newer CPython)."""
    lines = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^(python3 -m pip install -e '\.\[dev[^\]]*\]' && .*)$", readme, re.M)
    assert len(commands) == 1 and commands[0] in lines, (commands, lines)
    assert "pytest -q" in commands[0] and "'.[dev,reference]'" in commands[0]
    after = [line for line in lines[lines.index(commands[0]) + 1:] if line.startswith("bash ")]
    for line in after:
        script = line.split()[1]
        assert (ROOT / script).is_file() and f"]({script})" in readme, script


def test_the_readmes_python_blocks_run():
    """The README's Python examples (the third door's gradcheck, "Autograd in 15 lines", the Function of one's own)
    run as written, in one namespace, in order: each gradcheck returns True."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.M | re.S)
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    x = namespace["x"]
    assert namespace["mt"].gradcheck(namespace["Cube"].apply, [x]) is True


def test_backprop_mds_op_in_both_forms_runs_and_both_forms_agree_to_second_order():
    """docs/backprop.md's "One op, written in both forms" runs as written (its assert compares the two gradients);
    both classes then pass gradcheck and gradgradcheck."""
    (block,) = re.findall(r"^```python\n(.*?)^```", BACKPROP, re.M | re.S)
    namespace = {}
    exec(compile(block, "docs/backprop.md", "exec"), namespace)
    x = mt.tensor([0.3, -0.8, 1.1], dtype=mt.float64, requires_grad=True)
    for cls in (namespace["Exp"], namespace["ExpCtx"]):
        assert mt.gradcheck(cls.apply, [x]) and mt.gradgradcheck(cls.apply, [x])


def failure_rows():
    """(message cell, [(test file, test name)]) of each row of docs/design.md's failure table."""
    design = (ROOT / "docs" / "design.md").read_text()
    section = design[design.index("### Failures: one line each"):]
    section = section[:section.index("\n## ")]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "`tests/" in line]
    return [(cells[1], [tuple(t.strip("` ").split("::")) for t in cells[-1].strip(" |").split(", ")]) for cells in rows]


def joined_literals(source):
    """Python source with string literals split over lines ("abc "\n "def") joined, as Python joins them."""
    return re.sub(r"([\"'])\s*\n\s*\(?f?\1", "", source)


def test_each_message_of_the_failure_table_is_the_one_its_test_asserts():
    rows = failure_rows()
    assert len(rows) >= 15
    for message, tests in rows:
        bodies = []
        for test_file, test_name in tests:
            source = joined_literals((ROOT / test_file).read_text())
            assert re.search(rf"^def {test_name}\(", source, re.M), f"{test_file} has no test {test_name}"
            at = source.index(f"def {test_name}(")   # the test with its decorators (a parametrize's messages)
            end = source.find("\n\n\n", at)
            bodies.append(source[source.rfind("\n\n\n", 0, at):None if end < 0 else end])
        spans = re.findall(r"`([^`]+)`", message)
        # the first span is the message; one with a placeholder (PHASE, N) or an escape is shown, not asserted
        if spans and not re.search(r"\bPHASE\b|^\\", spans[0]):
            text = spans[0].removeprefix("RUN/config.json: ")
            assert any(text in body for body in bodies), f"{tests} do not assert {text!r}"
