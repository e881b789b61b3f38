"""The ``>>>`` examples in the docstrings of ``xops/`` run and print what they show.

One test per module that has examples. The examples run in the module's own namespace
plus ``xo`` (xops), ``xops``, ``np``, ``xnp`` (xops.numpy) and ``run_parallel``
(xops.distributed.run_parallel, which the collectives' examples use), with NumPy's
default print options pinned so that the reprs match on every machine. Options:
ELLIPSIS (``xo.tensor(..., f32[2,2])`` for random values) and NORMALIZE_WHITESPACE
(long outputs may wrap). Examples that need what a docstring cannot set up (torch, files
of a trained model) carry ``# doctest: +SKIP``.
"""

import doctest
import importlib
import pathlib

import numpy as np
import pytest

import xops

PACKAGE = pathlib.Path(xops.__file__).resolve().parent

# Modules not imported here: entry points (``python -m``), and examples that train.
_SKIP = {"xops.examples.train_digits", "xops.stablehlo.__main__"}


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules_with_examples():
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        if name in _SKIP or "cuda" in name.split("."):  # CUDA modules need a GPU to import
            continue
        if ">>> " in path.read_text(encoding="utf-8"):
            names.append(name)
    return names


MODULES = _modules_with_examples()


@pytest.fixture
def _process_state():
    """Examples seed the global random stream and register custom calls: put both back."""
    from xops.ops import control, rng

    stream = rng._STREAM
    key, counter = stream.key, stream.counter
    calls = dict(control._CUSTOM_CALLS)
    yield
    stream.key, stream.counter = key, counter
    control._CUSTOM_CALLS.clear()
    control._CUSTOM_CALLS.update(calls)


def test_modules_found():
    assert len(MODULES) >= 20 and "xops.ops.movement" in MODULES, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name, _process_state):
    import xops.distributed
    import xops.numpy

    module = importlib.import_module(name)
    extra = {
        "xo": xops,
        "xops": xops,
        "np": np,
        "xnp": xops.numpy,
        "run_parallel": xops.distributed.run_parallel,
    }
    tests = doctest.DocTestFinder().find(module, name, extraglobs=extra)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    report = []
    with np.printoptions(
        precision=8,
        threshold=1000,
        edgeitems=3,
        linewidth=75,
        suppress=False,
        nanstr="nan",
        infstr="inf",
        sign="-",
        floatmode="maxprec",
        legacy=False,
    ):
        for test in tests:
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    found = sum(len(test.examples) for test in tests)
    assert found > 0, f"{name}: '>>> ' in the source but no doctest was found"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} failed\n" + "".join(
        report
    )
