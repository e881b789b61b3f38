"""ruff lint and format checks over the code (settings: ``[tool.ruff]`` in pyproject.toml).

Run by hand: ``python -m ruff check xops tests benchmarks docs`` and
``python -m ruff format --check xops tests benchmarks docs``.
"""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("ruff")

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATHS = ["xops", "tests", "benchmarks", "docs"]


def _ruff(*args):
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ruff_check():
    r = _ruff("check", "--no-cache", "--output-format", "concise")
    assert r.returncode == 0, f"ruff check found problems:\n{r.stdout}{r.stderr}"


def test_ruff_format():
    r = _ruff("format", "--no-cache", "--check", "--diff")
    assert r.returncode == 0, f"ruff format would change files:\n{r.stdout}{r.stderr}"
