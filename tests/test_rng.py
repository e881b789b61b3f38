"""rng_bit_generator (bit-exact with XLA: Random123 known-answer vectors, the spec's
example, jax.lax.rng_bit_generator), rng / rng_uniform / rng_normal (determinism under
xo.random_seed, distribution sanity with fixed seeds) and every constraint label."""

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec
from xops.kernels import rng as K
from xops.ops.rng import philox4x32_reference, threefry2x32_reference

# Random123 known-answer vectors (kat_vectors, Threefry2x32_20 and Philox4x32_10):
# (key words, counter words, output words). Each one is reproduced by the NumPy
# reference and the Numba kernel here, and by an independent implementation where one
# exists: jax's threefry_2x32 for all three Threefry vectors and XLA's Philox (through
# jax.lax.rng_bit_generator, whose 2-word state fixes counter high = key) for the first
# two Philox vectors.
THREEFRY_KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]
PHILOX_KAT = [
    ((0x00000000, 0x00000000), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0xA4093822, 0x299F31D0),
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def _u64(lo, hi):
    return lo | (hi << 32)


@pytest.mark.parametrize("key,ctr,want", THREEFRY_KAT)
def test_threefry_known_answers(key, ctr, want):
    ref = threefry2x32_reference(key, (np.uint32([ctr[0]]), np.uint32([ctr[1]])))
    assert [int(w[0]) for w in ref] == list(want)
    out0, out1 = np.empty(1, np.uint32), np.empty(1, np.uint32)
    K.threefry2x32(1, np.uint64(key[0]), np.uint64(key[1]), np.uint64(_u64(*ctr)), out0, out1)
    assert (int(out0[0]), int(out1[0])) == want
    # through the op: THREE_FRY state [key, counter], one ui64 output = hi:lo words
    _, bits = xo.rng_bit_generator(
        "THREE_FRY", xo.tensor([_u64(*key), _u64(*ctr)], "ui64"), [], "ui64"
    )
    assert int(bits) == _u64(*want)


@pytest.mark.parametrize("key,ctr,want", PHILOX_KAT)
def test_philox_known_answers(key, ctr, want):
    ref = philox4x32_reference(key, [np.uint32([c]) for c in ctr])
    assert [int(w[0]) for w in ref] == list(want)
    out = np.empty((1, 4), np.uint32)
    K.philox4x32(
        1,
        np.uint64(key[0]),
        np.uint64(key[1]),
        np.uint64(_u64(ctr[0], ctr[1])),
        np.uint64(_u64(ctr[2], ctr[3])),
        out,
    )
    assert tuple(int(v) for v in out[0]) == want
    # through the op: PHILOX state [key, counter low, counter high], 4 ui32 outputs
    state = xo.tensor([_u64(*key), _u64(ctr[0], ctr[1]), _u64(ctr[2], ctr[3])], "ui64")
    _, bits = xo.rng_bit_generator("PHILOX", state, [4], "ui32")
    assert_tensor(bits, np.array(want, np.uint32))


def test_threefry_kat_against_jax():
    jr = pytest.importorskip("jax.extend.random")
    for key, ctr, want in THREEFRY_KAT:
        got = jr.threefry_2x32(np.uint32(key), np.uint32(ctr))
        assert tuple(int(v) for v in got) == want


def test_philox_kat_against_xla():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    for key, ctr, want in PHILOX_KAT[:2]:  # 2-word states: counter high word = key
        k = jnp.array([key[0], key[1], ctr[0], ctr[1]], jnp.uint32)  # u32[4] = u64[2]
        _, bits = jax.lax.rng_bit_generator(
            k, (4,), jnp.uint32, algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX
        )
        assert tuple(int(v) for v in bits) == want


def test_spec_example():
    state, out = xo.rng_bit_generator("THREE_FRY", xo.tensor([1, 2], "ui64"), [2, 2], "ui64")
    assert_tensor(state, np.array([1, 6], np.uint64), "ui64")
    assert_tensor(
        out,
        np.array(
            [
                [9236835810183407956, 16087790271692313299],
                [18212823393184779219, 2658481902456610144],
            ],
            np.uint64,
        ),
    )


def test_parallel_kernels_equal_serial():
    n = 1000
    a0, a1, b0, b1 = (np.empty(n, np.uint32) for _ in range(4))
    args = (np.uint64(0x12345678), np.uint64(0x9ABCDEF0), np.uint64(2**64 - 7))
    K.threefry2x32.serial(*args, a0, a1)
    K.threefry2x32.parallel(*args, b0, b1)
    np.testing.assert_array_equal(a0, b0)
    np.testing.assert_array_equal(a1, b1)
    p, q = np.empty((n, 4), np.uint32), np.empty((n, 4), np.uint32)
    args = (np.uint64(1), np.uint64(2), np.uint64(2**64 - 3), np.uint64(5))
    K.philox4x32.serial(*args, p)
    K.philox4x32.parallel(*args, q)
    np.testing.assert_array_equal(p, q)
    # and both equal the NumPy reference, across the 64-bit carry of the counter
    lo = np.uint64(2**64 - 3) + np.arange(n, dtype=np.uint64)
    hi = np.where(lo < np.uint64(2**64 - 3), 6, 5).astype(np.uint64)
    words = [
        lo & np.uint64(0xFFFFFFFF),
        lo >> np.uint64(32),
        hi & np.uint64(0xFFFFFFFF),
        hi >> np.uint64(32),
    ]
    np.testing.assert_array_equal(np.stack(philox4x32_reference((1, 2), words), 1), p)


# XLA cross-checks (each case costs jax a compile, ~0.2 s): u64/u32/u16/u8 outputs,
# scalars, shapes needing several blocks, odd dims (the 32-bit split then falls on the
# largest dim), an even dim in the middle, size-1 dims, counters that wrap around.
_JAX_CASES = {
    "THREE_FRY": [
        ((), "ui64", [1, 2]),
        ((7,), "ui64", [3, 2**64 - 3]),
        ((3, 5), "ui32", [11, 0]),
        ((5, 4, 3), "ui32", [2, 3]),
        ((3, 1, 7), "ui8", [1, 2**63]),
        ((33,), "ui16", [4, 2**64 - 10]),
    ],
    "PHILOX": [
        ((), "ui32", [7, 2**64 - 1]),
        ((7,), "ui64", [3, 2**64 - 3]),
        ((3, 5), "ui32", [11, 0]),
        ((33,), "ui16", [4, 2**64 - 10]),
        ((3, 1, 7), "ui8", [1, 2**63]),
    ],
    "DEFAULT": [((2, 5), "ui32", [5, 9])],
}


@pytest.mark.parametrize("algorithm", ["THREE_FRY", "PHILOX", "DEFAULT"])
def test_against_jax(algorithm):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    algo = getattr(jax.lax.RandomAlgorithm, "RNG_" + algorithm)
    with jax.enable_x64(True):
        for shape, dt, st in _JAX_CASES[algorithm]:
            js, jo = jax.lax.rng_bit_generator(
                jnp.array(st, jnp.uint64), shape, getattr(jnp, "uint" + dt[2:]), algorithm=algo
            )
            xs, xout = xo.rng_bit_generator(algorithm, xo.tensor(st, "ui64"), shape, dt)
            assert_tensor(xs, np.asarray(js), "ui64")
            assert_tensor(xout, np.asarray(jo), dt)


def test_default_is_philox():
    st = xo.tensor([8, 9, 10], "ui64")
    for a, b in zip(
        xo.rng_bit_generator("DEFAULT", st, [3, 5], "ui32"),
        xo.rng_bit_generator("PHILOX", st, [3, 5], "ui32"),
    ):
        assert_tensor(a, np.asarray(b))


def test_philox_three_word_state():
    # a 2-word state is [key, counter low] with counter high = key (XLA)
    s2, b2 = xo.rng_bit_generator("PHILOX", xo.tensor([9, 2**64 - 1], "ui64"), [6], "ui64")
    s3, b3 = xo.rng_bit_generator("PHILOX", xo.tensor([9, 2**64 - 1, 9], "ui64"), [6], "ui64")
    assert_tensor(b3, np.asarray(b2))
    assert_tensor(s2, np.array([9, 2], np.uint64))  # the high word's carry is dropped
    assert_tensor(s3, np.array([9, 2, 10], np.uint64))  # 3 blocks of 2 ui64, with carry


@pytest.mark.parametrize(
    "algorithm,dt", [("THREE_FRY", "ui64"), ("PHILOX", "ui64"), ("PHILOX", "ui32")]
)
def test_threading_the_state_continues_the_stream(algorithm, dt):
    s0 = xo.tensor([42, 7], "ui64")
    _, whole = xo.rng_bit_generator(algorithm, s0, [8], dt)
    s1, first = xo.rng_bit_generator(algorithm, s0, [4], dt)
    _, second = xo.rng_bit_generator(algorithm, s1, [4], dt)
    assert_tensor(whole, np.concatenate([np.asarray(first), np.asarray(second)]))


@pytest.mark.parametrize(
    "dt",
    [
        "f32",
        "f64",
        "i32",
        "i64",
        "i8",
        "bf16",
        "f16",
        "i4",
        "ui4",
        "f4E2M1FN",
        "f6E2M3FN",
        "f8E4M3FN",
    ],
)
def test_outputs_are_raw_bits_of_any_type(dt):
    d = xo.as_dtype(dt)
    state = xo.tensor([5, 6], "ui64")
    wide = "ui64" if d.bits == 64 else "ui32"
    s_ref, ref = xo.rng_bit_generator("THREE_FRY", state, [3, 5], wide)
    s, out = xo.rng_bit_generator("THREE_FRY", state, [3, 5], dt)
    assert out.dtype is d and out.shape == (3, 5)
    assert_tensor(s, np.asarray(s_ref))
    raw = np.asarray(ref) & np.uint64((1 << d.bits) - 1)
    got = np.asarray(out)
    if d.bits in (8, 16, 32, 64):
        got = got.view({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[d.bits])
    else:  # sub-byte holders keep the value in the low bits of a byte
        got = got.view(np.uint8) & np.uint8((1 << d.bits) - 1)
    np.testing.assert_array_equal(got.astype(np.uint64), raw.astype(np.uint64))


def test_rng_bit_generator_constraints():
    st = xo.tensor([1, 2], "ui64")
    with raises_spec("rng_bit_generator", "I1"):
        xo.rng_bit_generator("MERSENNE", st, [2])
    with raises_spec("rng_bit_generator", "I2"):
        xo.rng_bit_generator("PHILOX", xo.tensor([1, 2], "i64"), [2])
    with raises_spec("rng_bit_generator", "I2"):
        xo.rng_bit_generator("PHILOX", xo.tensor([[1, 2]], "ui64"), [2])
    with raises_spec("rng_bit_generator", "I2"):
        xo.rng_bit_generator("PHILOX", st, [2], "i1")
    with raises_spec("rng_bit_generator", "I2"):
        xo.rng_bit_generator("PHILOX", st, [2], "c64")
    with raises_spec("rng_bit_generator", "I2"):
        xo.rng_bit_generator("PHILOX", st, [-1])
    with raises_spec("rng_bit_generator", "C2"):
        xo.rng_bit_generator("THREE_FRY", xo.tensor([1, 2, 3], "ui64"), [2])
    with raises_spec("rng_bit_generator", "C2"):
        xo.rng_bit_generator("DEFAULT", xo.tensor([1], "ui64"), [2])


def test_rng_bit_generator_records_nothing_differentiable():
    assert xo.rng_bit_generator.op_name == "rng_bit_generator"


# ---------------------------------------------------------------------------------------
# rng, rng_uniform, rng_normal
# ---------------------------------------------------------------------------------------


def test_rng_spec_example():
    xo.random_seed(0)
    out = xo.rng(xo.tensor(0, "i32"), xo.tensor(2, "i32"), xo.tensor([3, 3], "i64"), "UNIFORM")
    assert out.dtype == "i32" and out.shape == (3, 3)
    v = np.asarray(out)
    assert set(np.unique(v)) <= {0, 1}


def test_rng_is_deterministic_under_random_seed():
    xo.random_seed(123)
    a = [np.asarray(xo.rng(0.0, 1.0, [5], "UNIFORM")), np.asarray(xo.rng_normal(0.0, 1.0, [4]))]
    xo.random_seed(123)
    b = [np.asarray(xo.rng(0.0, 1.0, [5], "UNIFORM")), np.asarray(xo.rng_normal(0.0, 1.0, [4]))]
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    c = np.asarray(xo.rng(0.0, 1.0, [5], "UNIFORM"))  # the stream moves on
    assert not np.array_equal(a[0], c)
    xo.random_seed(124)
    assert not np.array_equal(a[0], np.asarray(xo.rng(0.0, 1.0, [5], "UNIFORM")))


def test_rng_stream_is_philox_with_seed_as_key():
    # documented: random_seed(n) = Philox key n, counter 0; uniform floats use 53 bits
    xo.random_seed(77)
    got = np.asarray(xo.rng(xo.tensor(0.0, "f64"), xo.tensor(1.0, "f64"), [4], "UNIFORM"))
    _, bits = xo.rng_bit_generator("PHILOX", xo.tensor([77, 0, 0], "ui64"), [4], "ui64")
    want = (np.asarray(bits) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16", "f16"])
def test_uniform_float_statistics(dt):
    xo.random_seed(1)
    n = 20000
    v = np.asarray(xo.rng(xo.tensor(-2.0, dt), xo.tensor(3.0, dt), [n], "UNIFORM"))
    assert xo.as_dtype(dt).np == v.dtype
    v = v.astype(np.float64)
    assert v.min() >= -2.0 and v.max() < 3.0
    se_mean = 5 / np.sqrt(12 * n)
    assert abs(v.mean() - 0.5) < 4 * se_mean
    assert abs(v.std() - 5 / np.sqrt(12)) < 0.03


@pytest.mark.parametrize("dt", ["bf16", "f8E4M3FN", "f32"])
def test_uniform_never_reaches_b(dt):
    # a narrow interval right below b: rounding a + u(b - a) to the type hits b often
    xo.random_seed(2)
    a, b = {"bf16": 1.0 - 2.0**-6, "f8E4M3FN": 0.875, "f32": 1.0 - 2.0**-20}[dt], 1.0
    v = np.asarray(xo.rng(xo.tensor(a, dt), xo.tensor(b, dt), [4000], "UNIFORM")).astype(np.float64)
    assert v.max() < 1.0 and v.min() >= a


@pytest.mark.parametrize("dt", ["i32", "i64", "ui8", "i4", "ui64"])
def test_uniform_int_statistics(dt):
    xo.random_seed(3)
    d = xo.as_dtype(dt)
    lo, hi = (-3, 5) if d.is_signed else (2, 10)
    v = np.asarray(xo.rng(xo.tensor(lo, dt), xo.tensor(hi, dt), [16000], "UNIFORM"))
    assert v.dtype == d.np
    v = v.astype(np.int64)
    counts = np.bincount(v - lo, minlength=hi - lo)
    assert len(counts) == hi - lo  # every value in [lo, hi), none outside
    expected = 16000 / (hi - lo)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 7 degrees of freedom: p < 1e-4 above this


def test_uniform_int_full_range():
    xo.random_seed(4)
    v = np.asarray(
        xo.rng(xo.tensor(-(2**63), "i64"), xo.tensor(2**63 - 1, "i64"), [4000], "UNIFORM")
    )
    assert (v < 0).mean() == pytest.approx(0.5, abs=0.05)
    v = np.asarray(xo.rng(xo.tensor(0, "ui64"), xo.tensor(2**64 - 1, "ui64"), [4000], "UNIFORM"))
    assert (v >= np.uint64(2**63)).mean() == pytest.approx(0.5, abs=0.05)


def test_uniform_bool():
    out = xo.rng(xo.tensor(False), xo.tensor(True), [5], "UNIFORM")  # [False, True) = {False}
    assert_tensor(out, np.zeros(5, bool), "i1")


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
def test_normal_statistics(dt):
    xo.random_seed(5)
    n = 20000
    v = np.asarray(xo.rng(xo.tensor(1.5, dt), xo.tensor(2.0, dt), [n], "NORMAL")).astype(np.float64)
    assert abs(v.mean() - 1.5) < 4 * 2.0 / np.sqrt(n)
    assert abs(v.std() - 2.0) < 0.05
    # tails: about 4.55% beyond two standard deviations
    assert abs((np.abs(v - 1.5) > 4.0).mean() - 0.0455) < 0.006
    w = np.asarray(xo.rng_normal(xo.tensor(0.0, dt), xo.tensor(1.0, dt), [7, 3]))
    assert w.shape == (7, 3) and np.isfinite(w.astype(np.float64)).all()


def test_rng_shapes():
    assert xo.rng(0.0, 1.0, [], "UNIFORM").shape == ()
    assert xo.rng(0.0, 1.0, [0, 3], "NORMAL").shape == (0, 3)
    assert xo.rng_uniform(0, 4, (2, 1, 3)).shape == (2, 1, 3)
    assert xo.rng_uniform(0, 4, (2,)).dtype == "i64"  # Python scalars: i64 / f32


def test_rng_constraints():
    f, i = xo.tensor(0.0), xo.tensor(1, "i32")
    with raises_spec("rng", "C1"):
        xo.rng(f, i, [2], "UNIFORM")
    with raises_spec("rng", "C2"):
        xo.rng(xo.tensor(0, "i32"), i, [2], "NORMAL")
    with raises_spec("rng", "C3"):
        xo.rng(0.0, 1.0, [2, -1], "UNIFORM")
    with raises_spec("rng", "C3"):
        xo.rng(0.0, 1.0, [[2]], "UNIFORM")
    with raises_spec("rng", "I1"):
        xo.rng(xo.tensor([0.0]), 1.0, [2], "UNIFORM")
    with raises_spec("rng", "I1"):
        xo.rng(xo.tensor(0j), xo.tensor(1j), [2], "UNIFORM")
    with raises_spec("rng", "I2"):
        xo.rng(0.0, xo.tensor([1.0]), [2], "UNIFORM")
    with raises_spec("rng", "I4"):
        xo.rng(0.0, 1.0, [2], "POISSON")
    with raises_spec("rng", "I2"):  # UNIFORM needs a < b
        xo.rng(1.0, 1.0, [2], "UNIFORM")
    with raises_spec("rng_normal", "I2"):  # NORMAL needs sigma >= 0
        xo.rng_normal(0.0, -1.0, [2])
    with raises_spec("rng_uniform", "C1"):
        xo.rng_uniform(f, i, [2])
    with raises_spec("random_seed", "I1"):
        xo.random_seed(1.5)


def test_numpy_path_of_the_block_kernels_equals_the_compiled_one():
    # a process's first small calls run the block functions on NumPy arrays (no compile)
    n, start = 300, np.uint64(2**64 - 100)  # across the 64-bit counter wrap and carry
    a0, a1, b0, b1 = (np.empty(n, np.uint32) for _ in range(4))
    K._threefry2x32_numpy(np.uint64(7), np.uint64(0xFFFFFFFF), start, a0, a1)
    K.threefry2x32.serial(np.uint64(7), np.uint64(0xFFFFFFFF), start, b0, b1)
    np.testing.assert_array_equal(a0, b0)
    np.testing.assert_array_equal(a1, b1)
    p, q = np.empty((n, 4), np.uint32), np.empty((n, 4), np.uint32)
    args = (np.uint64(3), np.uint64(0xFFFFFFFE), start, np.uint64(2**64 - 1))
    K._philox4x32_numpy(*args, p)
    K.philox4x32.serial(*args, q)
    np.testing.assert_array_equal(p, q)
