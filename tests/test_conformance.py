"""The StableHLO interpreter conformance files, run through xops' StableHLO executor.

Every entry function (no arguments, or ``@main`` with the ``RUN:`` line's ``--args``)
of every file under ``../shared/conformance/stablehlo-interpret/`` is one test, id
``file.mlir::function`` (``#2``, ``#3``... for names repeated across ``// -----``
sections). The files are data: read here, never copied into the project. Each file is
parsed once, at collection.

* ``SKIP`` below is the one list of files (or single functions) needing features that
  come later; it is empty: the collectives, infeed/outfeed and send/recv run on the
  in-process grid of ``interpreter.run_parallel`` (``xops/stablehlo/collectives.py``).
* A function that reaches an op xops has not implemented yet is ``xfail`` (the reason
  names the op), so the suite stays green while ops land; it passes as soon as the op
  exists.
* Every other function must pass.
"""

import functools
from pathlib import Path

import pytest

from xops.stablehlo.runner import collect, run_entry

CONFORMANCE = Path(__file__).parents[1].parent / "shared" / "conformance" / "stablehlo-interpret"

if not CONFORMANCE.is_dir():
    pytest.skip(f"no conformance files at {CONFORMANCE}", allow_module_level=True)

# The one skip list: file, or file::function, -> reason.
SKIP = {}


def _skip_reason(test_id):
    file, _, func = test_id.partition("::")
    base = func.split("#")[0]
    return SKIP.get(test_id) or SKIP.get(f"{file}::{base}") or SKIP.get(file)


@functools.cache
def _entries():
    out = []
    for path in sorted(CONFORMANCE.rglob("*.mlir")):
        rel = path.relative_to(CONFORMANCE).as_posix()
        out.extend(collect(str(path), display=rel))
    return out


def _params():
    params = []
    for e in _entries():
        reason = _skip_reason(e.test_id)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(e, id=e.test_id, marks=marks))
    return params


_PROGRAMS = {}  # one Program per parsed module, shared by its functions


@pytest.mark.parametrize("entry", _params())
def test_conformance(entry):
    r = run_entry(entry, programs=_PROGRAMS)
    if r.status == "missing":
        pytest.xfail(r.reason)
    assert r.status == "pass", f"{r.status}: {r.reason}" + (f" (line {r.line})" if r.line else "")


def test_every_file_has_entries():
    """No conformance file silently contributes zero tests."""
    files = {e.test_id.split("::")[0] for e in _entries()}
    every = {p.relative_to(CONFORMANCE).as_posix() for p in CONFORMANCE.rglob("*.mlir")}
    assert every == files
