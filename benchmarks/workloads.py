"""The benchmark workloads' registry and shared helpers. Each workload makes one
zero-argument callable per backend from the same input data; "numpy" is the reference
(a straightforward vectorised NumPy version with the spec's semantics where NumPy has
no such op).

Each op family registers its workloads with ``@workload`` in ``benchmarks/wl_<family>.py``.
Sizes go through :func:`dim` (``dim(full, tiny)``): the test suite's smoke mode
(``tests/test_benchmarks.py``) sets :data:`SMOKE` and runs every workload once on the
tiny shapes, so the harness cannot rot without a failing test.

Backends whose name is in a workload's ``unchecked`` are timed as baselines but not
compared with the reference (NumPy's plain ``floor_divide`` beside the spec's truncating
``divide``, an in-place update that accumulates across calls).
"""

import importlib
import pkgutil

import numpy as np

WORKLOADS = []
SMOKE = False  # tests/test_benchmarks.py: tiny shapes, every workload once


class Workload:
    def __init__(self, name, desc, make, rtol=1e-5, derived=None, unchecked=()):
        self.name, self.desc, self.make, self.rtol, self.derived = name, desc, make, rtol, derived
        self.unchecked = frozenset(unchecked)


def workload(name, desc, rtol=1e-5, derived=None, unchecked=()):
    def register(make):
        WORKLOADS.append(Workload(name, desc, make, rtol, derived, unchecked))
        return make

    return register


def dim(full, tiny):
    """``full`` when benchmarking, ``tiny`` in the smoke mode (same structure, seconds)."""
    return tiny if SMOKE else full


def load_all():
    """Import every ``benchmarks/wl_*.py`` module so its workloads register."""
    from . import __path__ as here

    for mod in sorted(m.name for m in pkgutil.iter_modules(here) if m.name.startswith("wl_")):
        importlib.import_module(f"benchmarks.{mod}")


def gbs(nbytes):
    return lambda s: f"{nbytes / s / 1e9:.2f} GB/s"


def gflops(flop):
    return lambda s: f"{flop / s / 1e9:.1f} GFLOP/s"


def per_op(s):
    return f"{s * 1e6:.2f} us/op"


def _frameworks(be, arrays, np_fn, xo_fn=None, torch_fn=None, jax_fn=None, torch_dtype=None):
    """One callable per available backend over the same NumPy ``arrays``."""
    fns = {"numpy": lambda: np_fn(*arrays)}
    xo = be["xops"]
    if xo_fn is not None:
        xs = [xo.tensor(a) for a in arrays]
        fns["xops"] = lambda: xo_fn(*xs)
    torch = be.get("torch")
    if torch is not None and torch_fn is not None:
        ts = [torch.from_numpy(np.asarray(a, np.float32) if torch_dtype else a) for a in arrays]
        if torch_dtype is not None:
            ts = [t.to(getattr(torch, torch_dtype)) for t in ts]
        fns["torch"] = lambda: torch_fn(*ts)
    jax = be.get("jax")
    if jax is not None and jax_fn is not None:
        import jax.numpy as jnp

        js = [jnp.asarray(a) for a in arrays]
        fns["jax"] = lambda: jax_fn(*js)
        jitted = jax.jit(jax_fn)
        fns["jax_jit"] = lambda: jitted(*js)
    return fns


def _rng():
    return np.random.default_rng(0)


def _lax(name):
    def get():
        import jax

        return getattr(jax.lax, name)

    return get


@workload("dispatch_add", "xo.add (1,)+(1,) f32: per-op overhead", derived=per_op)
def _dispatch(be):
    a = np.ones(1, np.float32)
    t, j = be.get("torch"), be.get("jax")
    return _frameworks(
        be, [a, a], np.add, be["xops"].add, t and t.add, j and (lambda x, y: j.lax.add(x, y))
    )
