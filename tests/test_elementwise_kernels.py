"""The Numba kernels' parallel (prange) variants against their serial ones, and the
immutability contract: ops never change their inputs and return read-only arrays.

The parallel variant runs when an input has at least ``PARALLEL_THRESHOLD`` elements;
setting it to 0 forces it on the small arrays of a test. Each kernel is checked once,
on the wide type it is compiled for (int64, or uint64 where it only takes that;
float32 and float64), so each parallel compilation happens once per session.
"""

import numpy as np
import pytest

import xops as xo
from xops.kernels import config
from xops.kernels import elementwise as K
from conftest import assert_tensor, bits
from test_elementwise import RECORDS, accepted, ieee_max, ieee_min, make_operands, rng_for

N = 4099  # several chunks per thread, and not a multiple of anything


def _ints(rng, dtype, n=N):
    dt = xo.as_dtype(dtype)
    wide = np.uint64 if dt.kind == "ui" else np.int64
    edges = np.array([dt.min, dt.max, 0, 1, dt.max // 2, 2, 3], dtype=object)
    vals = np.concatenate(
        [
            rng.integers(dt.min, dt.max, n - 40, endpoint=True, dtype=wide),
            rng.integers(0, 70, 33, dtype=wide),
            edges.astype(wide),
        ]
    )
    if dt.kind == "si":
        vals[:100] = rng.integers(-3, 3, 100)  # -1 and 0 divisors, negative exponents
    return xo.tensor(rng.permutation(vals).astype(dt.np), dtype)


def _floats(rng, dtype, n=N):
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    x[:8] = [np.nan, -np.inf, np.inf, -0.0, 0.0, 2.5, -2.5, 0.5]
    x[8:108] = rng.integers(-8, 8, 100) / 2  # ties for round_nearest_afz, equal pairs
    return xo.tensor(rng.permutation(x).astype(dtype), dtype)


CASES = [
    # (kernel, op, operand maker, dtype)
    ("int_divide", xo.divide, _ints, "i64"),
    ("uint_divide", xo.divide, _ints, "ui64"),
    ("int_remainder", xo.remainder, _ints, "i64"),
    ("uint_remainder", xo.remainder, _ints, "ui64"),
    ("int_power", xo.power, _ints, "i64"),
    ("shift_left", xo.shift_left, _ints, "i64"),
    ("shift_right_logical", xo.shift_right_logical, _ints, "i64"),
    ("shift_right_arithmetic", xo.shift_right_arithmetic, _ints, "i64"),
    ("count_leading_zeros", xo.count_leading_zeros, _ints, "i64"),  # runs on uint64
    ("float_maximum", xo.maximum, _floats, "float32"),
    ("float_maximum", xo.maximum, _floats, "float64"),
    ("float_minimum", xo.minimum, _floats, "float32"),
    ("float_minimum", xo.minimum, _floats, "float64"),
    ("round_nearest_afz", xo.round_nearest_afz, _floats, "float32"),
    ("round_nearest_afz", xo.round_nearest_afz, _floats, "float64"),
]


@pytest.mark.parametrize("kernel, op, make, dtype", CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_parallel_variant_equals_serial(monkeypatch, kernel, op, make, dtype):
    rng = rng_for("parallel", kernel, dtype)
    arity = 1 if op in (xo.count_leading_zeros, xo.round_nearest_afz) else 2
    args = [make(rng, dtype) for _ in range(arity)]
    if kernel.startswith(("int_power", "shift")):  # exponents / amounts around the width
        args[1] = xo.tensor(np.asarray(args[1]) % 70 - 3, dtype)
    serial = op(*args)
    monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 0)
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", 0)  # the shifts' serial cut-off
    parallel = op(*args)
    assert getattr(K, kernel)._parallel is not None, "the parallel variant did not run"
    assert parallel.dtype == serial.dtype
    np.testing.assert_array_equal(bits(parallel), bits(serial))


def test_parallel_variant_is_used_above_the_threshold(monkeypatch):
    monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 1000)
    x = xo.tensor(np.arange(-500, 500, dtype=np.float64) / 4)
    kern = K.round_nearest_afz
    calls = []
    real = type(kern).parallel.fget(kern)
    monkeypatch.setattr(kern, "_parallel", _Spy(real, calls))
    xo.round_nearest_afz(xo.tensor(np.arange(10, dtype=np.float64)))
    assert calls == []  # small: serial
    out = xo.round_nearest_afz(x)
    assert calls == [1000]
    assert_tensor(
        out,
        np.where(
            np.abs(np.asarray(x)) % 1 == 0.5,
            np.trunc(np.asarray(x)) + np.sign(np.asarray(x)),
            np.rint(np.asarray(x)),
        ),
        "f64",
    )


def test_memory_bound_loops_run_serially_below_their_threshold(monkeypatch):
    """The shifts and bf16/f16 add run on one core below K.PARALLEL_MAP_THRESHOLD
    elements (whatever config.PARALLEL_THRESHOLD says), with
    the same bits as the threaded run above it."""
    monkeypatch.setattr(config, "PARALLEL_THRESHOLD", 1000)
    rng = rng_for("memory-bound")
    n = 5000
    x = xo.tensor(rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32))
    s = xo.tensor((np.arange(n) % 40 - 4).astype(np.int32))
    kern = K.shift_right_arithmetic32
    calls = []
    real = type(kern).parallel.fget(kern)
    monkeypatch.setattr(kern, "_parallel", _Spy(real, calls))
    serial = xo.shift_right_arithmetic(x, s)
    assert calls == []  # 5000 >= PARALLEL_THRESHOLD, yet serial
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", 1000)
    threaded = xo.shift_right_arithmetic(x, s)
    assert calls == [n]
    np.testing.assert_array_equal(np.asarray(threaded), np.asarray(serial))
    amount = np.asarray(s).astype(np.int64)
    want = np.asarray(x).astype(np.int64) >> np.where((amount < 0) | (amount > 31), 31, amount)
    np.testing.assert_array_equal(np.asarray(serial), want.astype(np.int32))
    # bf16 add: one span call below PARALLEL_MAP_THRESHOLD, pieces on the threads above it
    a, b = (xo.tensor(rng.standard_normal(n), "bf16") for _ in range(2))
    a = xo.tensor(np.where(np.arange(n) % 97 == 3, np.nan, np.asarray(a, np.float32)), "bf16")
    spans = []
    body = K._narrow_binary_span
    monkeypatch.setattr(K, "_narrow_binary_span", lambda *v: spans.append(v[-1]) or body(*v))
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", n + 1)
    one = xo.add(a, b)
    assert spans == [n]
    monkeypatch.setattr(K, "_narrow_binary_span", body)  # (the pieces kernel compiles it in)
    monkeypatch.setattr(K, "PARALLEL_MAP_THRESHOLD", 1000)
    monkeypatch.setattr(K, "PIECE", 256)  # (pieces of whole vectors and a tail)
    monkeypatch.setattr(K, "_threads", lambda: 2)
    pieces = K._narrow_binary_pieces
    calls = []
    monkeypatch.setattr(pieces, "_parallel", _Spy(type(pieces).parallel.fget(pieces), calls))
    many = xo.add(a, b)
    assert len(calls) == 1  # (the parallel variant ran)
    np.testing.assert_array_equal(bits(many), bits(one))


@pytest.mark.parametrize("dtype", ["i32", "ui32", "i64", "ui64"])
def test_shift_fast_path_matches_the_spec(dtype):
    """The shifts' dispatch fast path (two same-shape Tensors of a 32/64-bit type):
    amounts read as unsigned, >= the width give 0 (left, logical) or the sign fill;
    any other call (another shape, a narrow type, a strided operand) declines."""
    dt = xo.as_dtype(dtype)
    bits_n = dt.bits
    rng = rng_for("shift-fast", dtype)
    info = np.iinfo(dt.np)
    x = rng.integers(info.min, info.max, (3, 50), dtype=dt.np, endpoint=True)
    s = ((np.arange(150) % (bits_n + 8)) - 4).reshape(3, 50).astype(dt.np)
    u = x.astype(object) % (1 << bits_n)  # the bit patterns
    amount = s.astype(object) % (1 << bits_n)  # read as unsigned
    sign = np.where(u >= 1 << (bits_n - 1), (1 << bits_n) - 1, 0)
    want = {
        xo.shift_left: np.where(amount < bits_n, (u << np.minimum(amount, 63)), 0),
        xo.shift_right_logical: np.where(amount < bits_n, u >> np.minimum(amount, 63), 0),
        xo.shift_right_arithmetic: np.where(
            amount < bits_n,
            (u >> np.minimum(amount, 63)) | (sign << np.maximum(bits_n - amount, 0)),
            sign,
        ),
    }
    tx, ts = xo.tensor(x, dtype), xo.tensor(s, dtype)
    for op, w in want.items():
        w = (w % (1 << bits_n)).astype(np.uint64).astype(dt.np)
        got = op._fast((tx, ts))
        assert got is not None and got.dtype == dt and got.shape == (3, 50)
        np.testing.assert_array_equal(np.asarray(got), w)
        np.testing.assert_array_equal(np.asarray(op(tx, ts)), w)
        assert op._fast((tx, xo.tensor(s[:, :1], dtype))) is None  # another shape
        assert op._fast((xo.tensor(x.T, dtype), xo.tensor(s.T, dtype))) is not None
        assert op._fast((tx[:, ::2], ts[:, ::2])) is None  # strided: the full path
        np.testing.assert_array_equal(np.asarray(op(tx[:, ::2], ts[:, ::2])), w[:, ::2])
    small = xo.tensor(np.array([1, -2], np.int8))
    assert xo.shift_left._fast((small, small)) is None


class _Spy:
    def __init__(self, fn, calls):
        self.fn, self.calls = fn, calls

    def __call__(self, *args):
        self.calls.append(args[-1].size)
        return self.fn(*args)


def test_kernel_docstrings_name_their_parallel_pattern():
    for name in [
        "int_divide",
        "uint_divide",
        "int_remainder",
        "uint_remainder",
        "int_power",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
        "count_leading_zeros",
        "float_maximum",
        "float_minimum",
        "round_nearest_afz",
    ]:
        assert "Output-parallel" in getattr(K, name).__doc__, name


# ---------------------------------------------------------------------------------------
# Immutability
# ---------------------------------------------------------------------------------------


def _cases():
    out = []
    for r in RECORDS:
        for name in ["i1", "i8", "ui32", "f32", "bf16", "c128"]:
            dt = xo.as_dtype(name)
            if dt in accepted(r):
                out.append(pytest.param(r, dt, id=f"{r.name}-{name}"))
    return out


@pytest.mark.parametrize("rec, dt", _cases())
def test_inputs_unchanged_and_results_read_only(rec, dt):
    args = make_operands(rec, dt, rng_for("immutable", rec.name, dt.name), (2, 3))
    tensors = [xo.tensor(a, dt) for a in args]
    before = [bits(np.asarray(t)).copy() for t in tensors]
    out = rec.fn(*tensors)
    for t, b in zip(tensors, before):
        np.testing.assert_array_equal(bits(np.asarray(t)), b)
        assert not np.asarray(t).flags.writeable
    value = np.asarray(out)
    assert isinstance(value, np.ndarray) and not value.flags.writeable
    with pytest.raises(ValueError):
        value[...] = value
    saved = bits(value).copy()
    out[0] = out[1]  # copy-on-write: rebinds `out`, the old buffer never changes
    np.testing.assert_array_equal(bits(value), saved)
    np.testing.assert_array_equal(bits(np.asarray(out)[0]), saved[1])


def test_compare_select_clamp_complex_results_read_only():
    a, b = xo.tensor([1.0, 2.0], "f32"), xo.tensor([2.0, 1.0], "f32")
    outs = [
        xo.compare(a, b, "LT"),
        xo.compare(a, b, "LT", "TOTALORDER"),
        xo.select(xo.tensor([True, False]), a, b),
        xo.select(True, a, b),
        xo.clamp(xo.tensor(0.0), a, xo.tensor(1.5)),
        xo.clamp(a, a, b),
        xo.complex(a, b),
        xo.add(a, 1.0),
        xo.add(xo.tensor(1.0), 1.0),
    ]
    for out in outs:
        assert isinstance(np.asarray(out), np.ndarray)
        assert not np.asarray(out).flags.writeable
    assert_tensor(a, [1.0, 2.0], "f32")
    assert_tensor(b, [2.0, 1.0], "f32")


def test_numpy_operands_are_copied_not_aliased():
    host = np.array([1.0, -2.0, 3.0], np.float32)
    neg = xo.negate(host)
    total = xo.add(host, host)
    host[:] = 100.0
    assert_tensor(neg, [-1.0, 2.0, -3.0], "f32")
    assert_tensor(total, [2.0, -4.0, 6.0], "f32")


def test_zero_d_results_are_arrays_for_every_path():
    """A ufunc on 0-d arrays returns a NumPy scalar; results must still be 0-d arrays
    (read-only), on the no-conversion paths too."""
    for dtype in ["i32", "f32", "f64", "c64", "bf16", "i1"]:
        x = xo.tensor(np.ones((), xo.as_dtype(dtype).np), dtype)
        for fn in (xo.add, xo.multiply, xo.maximum, xo.compare):
            out = fn(x, x, "EQ") if fn is xo.compare else fn(x, x)
            value = np.asarray(out)
            assert type(value) is np.ndarray and value.shape == () and not value.flags.writeable


@pytest.mark.parametrize("op", [xo.maximum, xo.minimum])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bf16"])
def test_extremum_with_a_scalar_is_the_array_path(monkeypatch, op, dtype):
    """maximum/minimum with one operand a weak scalar (xo.maximum(h, 0.0)) run a kernel
    that takes the scalar as it is: bit for bit what the operand broadcast to an array
    gives, either order, NaN and signed zeros on both sides, serial and parallel."""
    rng = np.random.default_rng(7)
    x = xo.tensor(np.asarray(_floats(rng, "float64")), dtype)  # (rounded to the type)
    xs = xo.tensor(np.asarray(x)[:4089].reshape(87, 47), dtype)
    for s in (0.0, -0.0, np.nan, 0.5, -np.inf):
        full = xo.tensor(np.full(xs.shape, s), dtype)
        for scalar in (s,):  # (a weak Python scalar: the spec ops take no other broadcast)
            for threshold in (1 << 62, 0):
                monkeypatch.setattr(config, "PARALLEL_THRESHOLD", threshold)
                for got, want in ((op(xs, scalar), op(xs, full)), (op(scalar, xs), op(full, xs))):
                    assert got.shape == want.shape and got.dtype == want.dtype
                    np.testing.assert_array_equal(bits(got), bits(want))
    used = K.float_maximum_scalar if op is xo.maximum else K.float_minimum_scalar
    assert used._serial is not None and used._parallel is not None, "the scalar kernel did not run"
    ref = ieee_max if op is xo.maximum else ieee_min  # the spec's picks, in float64
    x64 = np.asarray(x, np.float64)
    for s in (0.0, -0.0):
        want, got = ref(x64, np.float64(s)), np.asarray(op(x, s), np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(got[keep].view(np.uint64), want[keep].view(np.uint64))


def test_extremum_with_a_scalar_reads_a_transposed_operand_in_its_order():
    v = np.asarray(_floats(np.random.default_rng(8), "float32"))[:4096].reshape(8, 8, 64)
    h = xo.transpose(xo.tensor(v), [1, 0, 2])
    for op in (xo.maximum, xo.minimum):
        got, want = op(h, 0.0), op(xo.tensor(np.ascontiguousarray(np.asarray(h))), 0.0)
        assert got.shape == want.shape
        np.testing.assert_array_equal(bits(got), bits(want))
