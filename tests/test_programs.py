"""Compiled body programs (xops.kernels.programs) and float32 log1p
(xops.kernels.transcendental.log1p32, behind xo.log_plus_one on float32)."""

import numba
import numpy as np
import pytest

import xops as xo
from xops.kernels import programs as P
from xops.kernels import reduction as KR
from xops.ops import reduction as R
from xops.ops._bodies import trace_program

from test_reduction import _logaddexp, _spy_program_fold


def _ulps(got, x):
    """|got - log1p(x)| in float32 ulps of the exact value (float64 log1p), finite
    nonzero results only."""
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.log1p(x.astype(np.float64))
    ok = np.isfinite(want) & (want != 0)
    spacing = np.spacing(np.abs(want[ok]).astype(np.float32)).astype(np.float64)
    return np.abs(got[ok].astype(np.float64) - want[ok]) / spacing


def _all_floats(lo, hi):
    """Every float32 in [lo, hi), 0 <= lo < hi."""
    a, b = np.array([lo, hi], np.float32).view(np.uint32)
    return np.arange(a, b, dtype=np.uint32).view(np.float32)


@pytest.mark.parametrize("lo,hi,sign", [(0.25, 0.5, -1), (0.25, 0.5, 1), (1.0, 2.0, 1)])
def test_log1p_f32_within_an_ulp_on_whole_binades(lo, hi, sign):
    """Every float32 of a binade (the ones around the near/far switch at
    1/sqrt(2) - 1 = -0.29 and sqrt(2) - 1 = 0.41, and [1, 2)): within 0.85 ulp of log1p,
    and correctly rounded for all but a few percent."""
    x = sign * _all_floats(lo, hi)
    got = np.asarray(xo.log_plus_one(xo.tensor(x)))
    err = _ulps(got, x)
    assert err.max() < 0.85
    rounded = np.log1p(x.astype(np.float64)).astype(np.float32)
    assert np.count_nonzero(got != rounded) < 0.07 * x.size


def test_log1p_f32_sampled_over_all_floats():
    bits = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.log1p(x.astype(np.float64)).astype(np.float32)
    got = np.asarray(xo.log_plus_one(xo.tensor(x)))
    assert _ulps(got, x).max() < 0.85
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])  # (NaN where NaN)
    signed = special & ~np.isnan(want)  # (zeros and infinities: their signs too)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def test_log1p_f32_special_values():
    x = np.array(
        [0.0, -0.0, -1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 2**-24, -(2**-24)]
        + [3.4e38, -0.99999994, 1e-8, -1e-8],
        np.float32,
    )
    got = np.asarray(xo.log_plus_one(xo.tensor(x)))
    want = [0.0, -0.0, -np.inf, np.nan, np.inf, np.nan, np.nan, 1e-45, -1e-45]
    # log1p(3.4e38) = 88.722008..., log1p(-1 + 2^-24) = log(2^-24) = -16.635532...
    want += [2**-24, -(2**-24), 88.72201, -16.635532, 1e-8, -1e-8]
    want = np.array(want, np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])


@pytest.mark.parametrize(
    "shape,dims",
    [((5, 1001), [1]), ((2049, 3), [0]), ((4, 3, 700), [0, 2]), ((4096, 1), [1]), ((1, 5003), [1])],
)
def test_logaddexp_reduce_matches_numpy_and_the_generic_tree(monkeypatch, shape, dims):
    rng = np.random.default_rng(30)
    v = (rng.standard_normal(shape) * 20).astype(np.float32)
    x = xo.tensor(v)
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(x, float("-inf"), dims, _logaddexp))
    kept = [d for d in range(len(shape)) if d not in dims]
    assert runs[-1] == (  # the compiled path ran (after its probe)
        int(np.prod([shape[d] for d in kept])),
        int(np.prod([shape[d] for d in dims])),
    )
    init = xo.tensor(np.float32(-np.inf))
    (gen,) = R._reduce_generic([x], [init], dims, _logaddexp, [x.dtype])
    np.testing.assert_array_equal(got.view(np.uint32), np.asarray(gen).view(np.uint32))
    want = np.logaddexp.reduce(v.astype(np.float64), axis=tuple(dims))
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_logaddexp_reduce_with_nan_and_infinities(monkeypatch):
    rng = np.random.default_rng(31)
    v = rng.standard_normal((8, 777)).astype(np.float32)
    v[1, 5] = np.nan
    v[2, 700] = np.inf
    v[3, :] = -np.inf  # (-inf) - (-inf) is NaN: this body's own answer, as the generic path's
    v[4, 10] = -np.inf
    v[5, 3] = v[5, 9] = np.inf  # inf - inf: NaN
    v[6, ::2] = 0.0
    v[6, 1::2] = -0.0
    v[7, 400] = 3e38
    x = xo.tensor(v)
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(x, float("-inf"), [1], _logaddexp))
    assert runs[-1] == (8, 777)
    init = xo.tensor(np.float32(-np.inf))
    (gen,) = R._reduce_generic([x], [init], [1], _logaddexp, [x.dtype])
    gen = np.asarray(gen)
    assert np.array_equal(np.isnan(got), np.isnan(gen))
    ok = ~np.isnan(gen)
    np.testing.assert_array_equal(got[ok].view(np.uint32), gen[ok].view(np.uint32))
    assert np.isnan(got[[1, 3, 5]]).all() and got[2] == np.inf and got[7] == np.float32(3e38)
    want = np.logaddexp.reduce(v[[0, 4, 6]].astype(np.float64), axis=1)
    np.testing.assert_allclose(got[[0, 4, 6]], want, rtol=2e-6)


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    v = np.random.default_rng(32).standard_normal((300, 513)).astype(np.float32)
    runs = _spy_program_fold(monkeypatch)
    before = numba.get_num_threads()
    outs = []
    try:
        for n in sorted({1, before}):
            numba.set_num_threads(n)
            outs.append(np.asarray(xo.reduce(xo.tensor(v), float("-inf"), [1], _logaddexp)))
    finally:
        numba.set_num_threads(before)
    assert runs[-1] == (300, 513)
    for o in outs[1:]:
        np.testing.assert_array_equal(o.view(np.uint32), outs[0].view(np.uint32))


def _two_exps(a, b):
    return xo.add(xo.exponential(xo.multiply(a, 0.25)), xo.exponential(xo.multiply(b, 0.25)))


def _signed_max(a, b):
    return xo.maximum(xo.multiply(a, 1.0), xo.minimum(b, xo.negate(xo.negate(b))))


@pytest.mark.parametrize("body", [_two_exps, _signed_max, _logaddexp], ids=["exps", "max", "lae"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generated_stages_are_the_generic_tree(monkeypatch, body, dtype):
    """Bodies of several heavy ops run in stages (values carried between them), zeros
    of both signs and NaN go through maximum/minimum as IEEE 754-2019 says, float64 too."""
    rng = np.random.default_rng(33)
    v = rng.standard_normal((9, 1000)).astype(dtype)
    v[0, :] = np.where(rng.random(1000) < 0.5, 0.0, -0.0)
    v[1, :] = -0.0
    v[2, 17] = np.nan
    x = xo.tensor(v)
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(x, -0.0, [1], body))
    if dtype == np.float32 or body is _signed_max:  # (float64 exp: NumPy's own loop on
        assert runs[-1] == (9, 1000)  # AVX-512 CPUs, which the probe keeps generic)
    init = xo.tensor(np.array(-0.0, dtype))
    (gen,) = R._reduce_generic([x], [init], [1], body, [x.dtype])
    gen = np.asarray(gen)
    assert np.array_equal(np.isnan(got), np.isnan(gen))
    ok = ~np.isnan(gen)
    np.testing.assert_array_equal(got[ok].view(np.uint8), gen[ok].view(np.uint8))
    if body is _signed_max:
        assert not np.signbit(got[0]) and np.signbit(got[1]) and np.isnan(got[2])


def test_level_source_stages_and_carried_values():
    prog = trace_program(_two_exps, xo.tensor(np.float32(0)).dtype, KR.PROGRAM_OPS)
    src, carried = P.level_source(prog[0], prog[2], KR._PROGRAM_NAMES, np.float32)
    assert src.count("for i in range") == 2 and carried == 2  # exp(a/4), b/4
    assert src.count("exp32(") == 2 and "c[i + np.uint64(0)] = r" in src
    prog = trace_program(_signed_max, xo.tensor(np.float32(0)).dtype, KR.PROGRAM_OPS)
    src, carried = P.level_source(prog[0], prog[2], KR._PROGRAM_NAMES, np.float32)
    assert src.count("for i in range") == 1 and carried == 0 and "ieee_min(" in src


def _scaled_sum(a, b):
    return xo.add(xo.multiply(a, 0.3125), b)


def test_generated_loops_without_a_writable_cache_run_in_memory(monkeypatch, tmp_path):
    """Where the generated module cannot be written, the loop is compiled in memory."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(P, "PROGRAM_DIR", str(blocked / "programs"))  # (a file's child)
    monkeypatch.setattr(P, "_ENTRIES", {})
    v = np.random.default_rng(34).standard_normal((20, 300)).astype(np.float32)
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.0, [1], _scaled_sum))
    assert runs[-1] == (20, 300) and P._ENTRIES and not (blocked / "programs").exists()
    x, init = xo.tensor(v), xo.tensor(np.float32(0))
    (gen,) = R._reduce_generic([x], [init], [1], _scaled_sum, [x.dtype])
    np.testing.assert_array_equal(got.view(np.uint32), np.asarray(gen).view(np.uint32))


def test_generated_modules_of_other_helper_versions_are_pruned(monkeypatch, tmp_path):
    (tmp_path / "__pycache__").mkdir()
    old = [
        tmp_path / "program_0000000000_aa.py",
        tmp_path / "__pycache__" / "program_0000000000_aa.nbi",
    ]
    for f in old:
        f.write_text("")
    monkeypatch.setattr(P, "PROGRAM_DIR", str(tmp_path))
    monkeypatch.setattr(P, "_ENTRIES", {})
    v = np.random.default_rng(35).standard_normal((20, 300)).astype(np.float32)
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.0, [1], _scaled_sum))
    assert runs[-1] == (20, 300) and not any(f.exists() for f in old)
    assert len(list(tmp_path.glob("program_*.py"))) == 1
    x, init = xo.tensor(v), xo.tensor(np.float32(0))
    (gen,) = R._reduce_generic([x], [init], [1], _scaled_sum, [x.dtype])
    np.testing.assert_array_equal(got.view(np.uint32), np.asarray(gen).view(np.uint32))
