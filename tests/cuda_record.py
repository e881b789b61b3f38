"""pytest plugin for a real-GPU run: which CUDA kernels each test ran, and whether every
test that ran a kernel passed. It is how ``xops.kernels.cuda.GPU_VERIFIED`` (the "GPU"
entries of docs/status.md's CUDA column) is established; docs/gpu.md gives the command:

    OUT=. PYTHONPATH=tests python -m pytest -q -p no:benchmark -p cuda_record \
        -W ignore::RuntimeWarning tests/test_cuda*.py

(``-W ignore::RuntimeWarning``, as the simulator run: the tests' NumPy reference code warns
on IEEE special values, and setup.cfg turns warnings into errors.)

Each process writes ``$OUT/cuda_ops_<worker>.json`` (one per pytest-xdist worker):
``{op: {"verified": bool, "tests": {test id: outcome}}}``.
"""

import json
import os
from collections import defaultdict

import pytest

_current = [None]
_used = defaultdict(set)  # op name -> ids of the tests that ran its CUDA kernel
_outcome = {}


def pytest_configure(config):
    from xops import registry

    plain = registry.set_kernel

    def set_kernel(name, device, impl):  # wraps each CUDA kernel as it is registered
        if device != "cuda":
            return plain(name, device, impl)

        def recorded(*args, **kwargs):
            _used[name].add(_current[0])
            return impl(*args, **kwargs)

        recorded.__wrapped__ = impl
        return plain(name, device, recorded)

    registry.set_kernel = set_kernel


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    yield
    _current[0] = None


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome == "failed":
        if _outcome.get(report.nodeid, "passed") == "passed":
            _outcome[report.nodeid] = report.outcome


def pytest_sessionfinish(session, exitstatus):
    out = {}
    for op, tests in sorted(_used.items()):
        tests.discard(None)
        results = {t: _outcome.get(t, "unknown") for t in sorted(tests)}
        ok = bool(results) and all(v == "passed" for v in results.values())
        out[op] = {"verified": ok, "tests": results}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ.get("OUT", "."), f"cuda_ops_{worker}.json"), "w") as f:
        json.dump(out, f, indent=1)
