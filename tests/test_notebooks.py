"""The notebooks in notebooks/: stored without outputs, linked from the docs, and run top to bottom (slow)."""
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
nbformat = pytest.importorskip("nbformat", reason="the notebook tests need the dev extras (pip install -e '.[dev]')")


def test_there_are_three_notebooks_stored_without_outputs():
    assert [p.name for p in NOTEBOOKS] == ["1_autograd_by_hand.ipynb", "2_fused_backward.ipynb",
                                           "3_transformer_translates.ipynb"]
    for path in NOTEBOOKS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name}, cell {i} has outputs"


def test_the_readme_links_every_notebook_and_backprop_md_the_second():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in readme, path.name
    assert "../notebooks/2_fused_backward.ipynb" in (ROOT / "docs" / "backprop.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    """Every cell runs without an error, in a scratch folder, importing this checkout's packages."""
    nbclient = pytest.importorskip("nbclient", reason="needs nbclient and ipykernel (pip install -e '.[dev]')")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    print(f"\n{path.name}: {time.perf_counter() - start:.1f} s")
