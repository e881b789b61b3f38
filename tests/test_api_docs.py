"""The API reference: it builds without a warning (docs/build_api.py, pdoc), and every
public function and class of the documented namespaces has a docstring."""

import importlib
import inspect
import pathlib
import runpy

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Each namespace's public names are its ``__all__``.
NAMESPACES = [
    "xops",
    "xops.numpy",
    "xops.numpy.linalg",
    "xops.numpy.fft",
    "xops.numpy.random",
    "xops.nn",
    "xops.nn.functional",
    "xops.nn.init",
    "xops.optim",
    "xops.optim.lr_scheduler",
    "xops.distributed",
    "xops.stablehlo",
]


def _undocumented(name):
    module = importlib.import_module(name)
    missing = []
    for attr in module.__all__:
        obj = getattr(module, attr)
        if not (inspect.isroutine(obj) or inspect.isclass(obj) or callable(obj)):
            continue  # constants, dtypes, submodules
        if inspect.ismodule(obj):
            continue
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        if not (doc or "").strip():
            missing.append(attr)
    return missing


@pytest.mark.parametrize("name", NAMESPACES)
def test_every_public_callable_has_a_docstring(name):
    missing = _undocumented(name)
    assert not missing, f"{name}: no docstring on {', '.join(missing)}"


def test_every_nn_module_class_has_a_docstring():
    import xops.nn as nn

    classes = [
        c
        for c in vars(nn.modules).values()
        if inspect.isclass(c) and issubclass(c, nn.Module) and not c.__name__.startswith("_")
    ]
    assert len(classes) > 15
    missing = [c.__name__ for c in classes if not (c.__dict__.get("__doc__") or "").strip()]
    assert not missing, f"xops.nn modules without a docstring: {', '.join(missing)}"


def test_api_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("pdoc")
    build = runpy.run_path(str(ROOT / "docs" / "build_api.py"))["build"]
    problems = build(tmp_path)
    assert not problems, "pdoc warnings:\n" + "\n".join(str(w.message) for w in problems)
    pages = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html")}
    for page in [
        "xops.html",
        "xops/numpy.html",
        "xops/numpy/linalg.html",
        "xops/nn.html",
        "xops/nn/functional.html",
        "xops/optim.html",
        "xops/distributed.html",
    ]:
        assert page in pages, f"{page} missing from the reference: {sorted(pages)}"
    assert "all_reduce" in (tmp_path / "xops.html").read_text(encoding="utf-8")
