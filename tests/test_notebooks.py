"""The teaching notebooks (notebooks/NN_*.ipynb): each runs headless, top to bottom,
in a Jupyter kernel of this interpreter (its cells assert on real values, so a wrong
result fails here), and each .ipynb holds exactly the cells of its jupytext .py pair.

Execution needs the test extra's nbclient, nbformat, ipykernel and matplotlib (skipped
without them); the pairing check needs nothing beyond the standard library.
"""

import json
import os
import re
import sys
from pathlib import Path

import pytest

import xops

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PAIRS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
NOTEBOOK_TIMEOUT = 300  # seconds for a whole notebook (each runs in well under 60 s)
ids = [p.stem for p in PAIRS]


# ---------------------------------------------------------------------------------------
# .py (jupytext percent format) <-> .ipynb
# ---------------------------------------------------------------------------------------

_MARKER = re.compile(r"^# %%(?P<rest>.*)$")


def _percent_cells(text):
    """[(cell_type, source)] of a jupytext percent-format script: the YAML header
    (a comment block between '# ---' lines) is skipped, '# %%' starts a code cell and
    '# %% [markdown]' a markdown cell whose lines lose their '# ' prefix; blank lines
    around a cell's source are dropped, as jupytext does."""
    lines = text.splitlines()
    if lines and lines[0] == "# ---":
        end = lines.index("# ---", 1)
        lines = lines[end + 1 :]
    cells, kind, body = [], None, []

    def flush():
        if kind is None:
            return
        src = body
        if kind == "markdown":
            src = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in src]
        while src and not src[0].strip():
            src = src[1:]
        while src and not src[-1].strip():
            src = src[:-1]
        cells.append((kind, "\n".join(src)))

    for line in lines:
        m = _MARKER.match(line)
        if m:
            flush()
            kind, body = ("markdown" if "[markdown]" in m["rest"] else "code"), []
        elif kind is not None:
            body.append(line)
    flush()
    return cells


def _ipynb(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_every_notebook_is_paired():
    assert [p.stem for p in PAIRS] == sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert len(PAIRS) == 5, [p.name for p in PAIRS]


@pytest.mark.parametrize("py", PAIRS, ids=ids)
def test_ipynb_matches_its_py(py):
    """Same cells, same order, same text (edit the .py, then `jupytext --sync`), and
    committed without outputs."""
    nb = _ipynb(py.with_suffix(".ipynb"))
    got = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]
    want = _percent_cells(py.read_text(encoding="utf-8"))
    assert len(got) == len(want), f"{len(got)} cells in the .ipynb, {len(want)} in the .py"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"cell {i} differs:\n--- .ipynb\n{g[1]}\n--- .py\n{w[1]}"
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and c["execution_count"] is None, (
                "commit notebooks without outputs"
            )
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert sum(k == "code" and "assert" in s for k, s in want) >= 3, "cells must check values"


# ---------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("py", PAIRS, ids=ids)
def test_notebook_runs(py, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel imports the xops under test, whether or not it is installed
    root = str(Path(xops.__file__).resolve().parent.parent)
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    # first, check that the "python3" kernel is this interpreter's environment
    nb.cells.insert(
        0, nbformat.v4.new_code_cell(f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix")
    )
    client = nbclient.NotebookClient(
        nb,
        timeout=NOTEBOOK_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
