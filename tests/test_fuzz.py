"""The project's own fuzz suite (issue #14): every public op, three kinds of calls.

* **valid**: a random valid call; it must return, satisfy the result invariants and agree
  with the op's naive reference (tests/fuzz_ops_*.py say which reference per op);
* **edge**: special values (NaN, +-inf, -0, int extremes, subnormals), empty dims, rank
  0, NumPy operands in C, Fortran and strided layouts, every element type the op takes,
  quantized operands: the result agrees with the reference, or a labelled SpecError;
* **mutation**: one mutation (a class of fuzz_core.MUTATIONS) of a valid call: a labelled
  SpecError, or a result that agrees with the reference for the mutated arguments;
  mutations that are invalid by construction must raise.

Anything else that escapes (TypeError, IndexError, a numba error, a NumPy warning) fails.
The default run is bounded and reproducible (hypothesis profile ``xops-ci``:
derandomized, ``XOPS_FUZZ_EXAMPLES`` examples per op and kind, default 4; ops on
compiled kernels draw from fuzz_core.KERNEL_TYPES). ``XOPS_FUZZ_EXAMPLES=200`` runs
longer with every element type and a random seed (``XOPS_FUZZ_SEED=n``: seed n);
``XOPS_FUZZ_REPORT=path`` writes the outcome counts as JSON. See docs/fuzzing.md.
"""

import importlib
import inspect
import json
import os
import pkgutil

import fuzz_core as F
import fuzz_ops_a  # noqa: F401  (registers generators)
import fuzz_ops_b  # noqa: F401
import fuzz_ops_c  # noqa: F401
import fuzz_ops_d  # noqa: F401
import fuzz_ops_q  # noqa: F401
import hypothesis
import numpy as np
import pytest
from fuzz_ops_a import GEN
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import xops.ops

# Every public module of xops/ops (a new module's ops are covered automatically).
MODULES = sorted(
    m.name
    for m in pkgutil.iter_modules(xops.ops.__path__)
    if not m.name.startswith("_") and m.name != "operators"
)
# Public names that are types, not ops (their constructors are exercised by the ops).
NOT_OPS = {
    "Token": "the token type (made by create_token / after_all)",
    "ConvDimensionNumbers": "a named tuple of attributes (convolution takes it)",
}

EXAMPLES = int(os.environ.get("XOPS_FUZZ_EXAMPLES", "4"))
LONG = "XOPS_FUZZ_EXAMPLES" in os.environ and EXAMPLES > 4
_HC = [
    HealthCheck.too_slow,
    HealthCheck.function_scoped_fixture,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]
SEED = os.environ.get("XOPS_FUZZ_SEED")  # a longer run with a chosen seed: reproducible
settings.register_profile(
    "xops-ci",
    max_examples=EXAMPLES,
    derandomize=not LONG and SEED is None,
    deadline=None,
    database=None,
    suppress_health_check=_HC,
    print_blob=True,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
_PROFILE = settings.get_profile("xops-ci")


def FUZZ(test):
    """The profile (and XOPS_FUZZ_SEED's seed) on a @given test, like @settings."""
    test = _PROFILE(test)
    return hypothesis.seed(int(SEED))(test) if SEED is not None else test


def public_ops():
    """Every callable in the ``__all__`` of every xops/ops module, except types; each
    must also be public as ``xo.<name>``."""
    out = []
    for mod in MODULES:
        m = importlib.import_module(f"xops.ops.{mod}")
        for name in m.__all__:
            if callable(getattr(m, name)) and name not in NOT_OPS:
                assert getattr(xops, name, None) is getattr(m, name), f"xo.{name} missing"
                out.append(name)
    return out


OPS = public_ops()


def test_every_public_op_has_a_fuzz_generator():
    missing = sorted(set(OPS) - set(GEN))
    assert not missing, f"public ops without a fuzz generator: {missing}"
    stale = sorted(set(GEN) - set(OPS))
    assert not stale, f"fuzz generators for names that are not public ops: {stale}"
    for name in NOT_OPS:
        assert inspect.isclass(getattr(importlib.import_module("xops"), name))


def test_every_mutation_class_applies_to_some_op():
    """Each mutation class has parameters of its kinds in at least one op's calls."""
    seen = set()
    for name in OPS:
        for seed in range(3):
            seen.update(F.mutation_classes_for(GEN[name](F.Draw(seed))))
    assert seen == set(F.MUTATIONS), sorted(set(F.MUTATIONS) - seen)


def make(op, draw):
    """One valid call of ``op`` (generators compute with IEEE specials quietly)."""
    with np.errstate(all="ignore"):
        return GEN[op](draw)


def _seed():
    return st.integers(0, 2**32 - 1)


@pytest.mark.parametrize("op", OPS)
@FUZZ
@given(seed=_seed())
def test_valid_calls(op, seed):
    case = make(op, F.Draw(seed))
    F.run_case(case, must_pass=True, what=" [valid]")


@pytest.mark.parametrize("op", OPS)
@FUZZ
@given(seed=_seed())
def test_edge_values(op, seed):
    case = make(op, F.Draw(seed, edge=True, full=LONG))
    F.run_case(case, what=" [edge]")


# ops with parameters to mutate (create_token, replica_id, partition_id take none)
MUTABLE = [op for op in OPS if F.mutation_classes_for(make(op, F.Draw(0)))]


@pytest.mark.parametrize("op", MUTABLE)
@FUZZ
@given(seed=_seed(), data=st.data())
def test_mutations(op, seed, data):
    draw = F.Draw(seed, edge=data.draw(st.booleans()), full=LONG)
    case = make(op, draw)
    classes = F.mutation_classes_for(case)
    assert classes, f"{op}: no parameter to mutate"
    cls = data.draw(st.sampled_from(classes))
    got = F.mutate(case, cls, draw.rng)
    if got is None:
        return
    mutated, must_raise = got
    F.Outcome.counts["mutations"] += 1
    F.Outcome.classes.add(cls)
    F.run_case(mutated, must_raise=must_raise, what=f" [mutation {cls}]")


def test_zz_report():
    """Write the outcome counts (XOPS_FUZZ_REPORT=path) after the fuzz tests ran."""
    path = os.environ.get("XOPS_FUZZ_REPORT")
    if not path:
        return
    with open(path, "w") as f:
        json.dump(
            {
                "ops": len(F.Outcome.ops),
                "op_names": sorted(F.Outcome.ops),
                "mutation_classes": sorted(F.Outcome.classes),
                **F.Outcome.counts,
                "labels": F.Outcome.labels,
                "examples": EXAMPLES,
            },
            f,
            indent=1,
        )
