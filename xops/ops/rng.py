"""Random numbers: stablehlo.rng_bit_generator (bit-exact with XLA), stablehlo.rng and
XLA's RngUniform / RngNormal.

**rng_bit_generator** is a pure function of its state. THREE_FRY and PHILOX reproduce
XLA's RngBitGenerator expander (``xla/service/rng_bit_generator_expander.cc`` over
``xla/hlo/builder/lib/prng.cc``) bit for bit, counter layout included:

* THREE_FRY, state ``[key, counter]``: Threefry-2x32-20 with key words (lo, hi) of
  ``key``. A 64-bit output element with row-major index i is the block of counter
  ``counter + i`` (its low word first). 32-bit outputs split the shape into halves
  along the first even dimension (else the largest one): block h fills the two
  neighbouring elements 2h' and 2h'+1 of that dimension. Narrower outputs take the low
  bits of a 32-bit output of the same shape. New state ``[key, counter + blocks]``.
* PHILOX, state ``[key, c_lo, c_hi]`` or ``[key, c_lo]`` (then ``c_hi = key``):
  Philox-4x32-10 over the 128-bit counter ``c_hi:c_lo``; block j gives 32-bit outputs
  4j..4j+3 (64-bit outputs 2j, 2j+1, each low word first). New state: the counter plus
  the number of blocks (the high word is dropped for a 2-word state, as XLA does).
* DEFAULT is PHILOX (XLA's choice on CPU and GPU; the spec leaves it
  implementation-defined), so it takes a 2- or 3-word state too.

Outputs may be of any integer or floating-point type: they are raw bit patterns (a float
output can hold NaNs and infinities), never numbers in [0, 1).

**rng** (UNIFORM / NORMAL) is implementation-defined and, in the spec, may use hidden
state. xops draws from one module-level Philox stream: ``xo.random_seed(n)`` resets it
to key ``n``, counter 0 (the stream starts seeded with 0 at import). Every ``rng`` call
consumes counter blocks, so a program that seeds once gives the same numbers on every
run and every machine (independent of NumPy's generators and of the thread count).
The stream is shared by all threads (calls are serialised by a lock). These ops are
creation ops: with no tensor operand they make their result on the default device
(``xo.default_device``), with CUDA operands on the GPU, where the kernels draw the same
words from the same stream (:mod:`xops.kernels.cuda.rng`).
"""

import threading

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype, from_compute
from ..kernels import rng as K
from ..limits import check_nbytes
from ..tensor import Tensor, _wrap
from ._core import SpecError, as_tensor, check, compute, operands, tstr

__all__ = ["rng_bit_generator", "rng", "rng_uniform", "rng_normal", "random_seed"]

_M64 = (1 << 64) - 1
_ALGORITHMS = ("DEFAULT", "THREE_FRY", "PHILOX")


# ---------------------------------------------------------------------------------------
# NumPy references of the block functions (the test oracle beside the Numba kernels)
# ---------------------------------------------------------------------------------------


def _rotl32(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32_reference(key, x):
    """Threefry-2x32 with 20 rounds, written as in the paper: ``key`` is a pair of
    uint32, ``x`` a pair of uint32 arrays (the counter words); returns the pair of
    output word arrays. uint32 arithmetic wraps as the algorithm needs."""
    rot = (13, 15, 26, 6, 17, 29, 16, 24)
    ks = [np.uint32(key[0]), np.uint32(key[1])]
    ks.append(ks[0] ^ ks[1] ^ np.uint32(0x1BD11BDA))
    with np.errstate(over="ignore"):
        x0 = np.asarray(x[0], np.uint32) + ks[0]
        x1 = np.asarray(x[1], np.uint32) + ks[1]
        for g in range(5):
            for r in range(4):
                x0 = x0 + x1
                x1 = _rotl32(x1, rot[(g % 2) * 4 + r]) ^ x0
            x0 = x0 + ks[(g + 1) % 3]
            x1 = x1 + ks[(g + 2) % 3] + np.uint32(g + 1)
    return x0, x1


def philox4x32_reference(key, c):
    """Philox-4x32 with 10 rounds: ``key`` a pair of uint32, ``c`` four uint32 arrays
    (counter words, least significant first); returns the four output word arrays."""
    c = [np.asarray(w, np.uint64) for w in c]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m = np.uint64(0xFFFFFFFF)
    for _ in range(10):
        p0 = c[0] * np.uint64(0xD2511F53)
        p1 = c[2] * np.uint64(0xCD9E8D57)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & m, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & m]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m
        k1 = (k1 + np.uint64(0xBB67AE85)) & m
    return [w.astype(np.uint32) for w in c]


# ---------------------------------------------------------------------------------------
# XLA's counter layouts (prng.cc), over the Numba block kernels
# ---------------------------------------------------------------------------------------


def _threefry_blocks(key, counter, n):
    out0 = np.empty(n, np.uint32)
    out1 = np.empty(n, np.uint32)
    K.threefry2x32(
        n, np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32), np.uint64(counter), out0, out1
    )
    return out0, out1


def _philox_blocks(key, counter, n):
    out = np.empty((n, 4), np.uint32)
    K.philox4x32(
        n,
        np.uint64(key & 0xFFFFFFFF),
        np.uint64(key >> 32),
        np.uint64(counter & _M64),
        np.uint64(counter >> 64),
        out,
    )
    return out


def _split_dim(shape):
    """XLA's SplitShapeIntoHalves: the first even dimension, else the largest one."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return int(np.argmax(shape))


def threefry_bits(key, counter, shape, bits):
    """(uint32 or uint64 array of ``shape``, blocks used) as XLA's ThreeFryRngBit32 /
    ThreeFryRngBit64 make them from ``key`` and the 64-bit ``counter``."""
    n = int(np.prod(shape, dtype=np.int64))
    if bits == 64:
        lo, hi = _threefry_blocks(key, counter, n)
        out = lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))
        return out.reshape(shape), n
    if len(shape) == 0:
        lo, _ = _threefry_blocks(key, counter, 1)
        return lo.reshape(()), 1
    s = _split_dim(shape)
    half = shape[:s] + ((shape[s] + 1) // 2, 1) + shape[s + 1 :]
    m = int(np.prod(half, dtype=np.int64))
    lo, hi = _threefry_blocks(key, counter, m)
    pair = np.concatenate([lo.reshape(half), hi.reshape(half)], axis=s + 1)
    full = pair.reshape(shape[:s] + (2 * half[s],) + shape[s + 1 :])
    return np.ascontiguousarray(full[(slice(None),) * s + (slice(0, shape[s]),)]), m


def philox_bits(key, counter, shape, bits):
    """(uint32 or uint64 array of ``shape``, blocks used) as XLA's PhiloxRngBit32 /
    PhiloxRngBit64 make them from ``key`` and the 128-bit ``counter``."""
    n = int(np.prod(shape, dtype=np.int64))
    per_block = 4 if bits == 32 else 2
    m = -(-n // per_block)
    words = _philox_blocks(key, counter, m)
    if bits == 64:
        words = words.view(np.uint64)  # (m, 2): words 0|1 and 2|3, low word first
    return words.reshape(-1)[:n].copy().reshape(shape), m


def _bit_generator(algorithm, state, shape, bits):
    """(raw bits, new state as a list of Python ints) for a validated call."""
    key = state[0]
    if algorithm == "THREE_FRY":
        out, m = threefry_bits(key, state[1], shape, bits)
        return out, [key, (state[1] + m) & _M64]
    hi = state[2] if len(state) == 3 else state[0]
    counter = state[1] | (hi << 64)
    out, m = philox_bits(key, counter, shape, bits)
    new = (counter + m) & ((1 << 128) - 1)
    return out, [key, new & _M64, new >> 64][: len(state)]


def _raw_to(bits, dt):
    """Holder array of element type ``dt`` from uint32/uint64 raw bits: the low
    ``dt.bits`` bits of each value, reinterpreted."""
    if dt.bits == bits.dtype.itemsize * 8:
        return bits.view(dt.np)
    if dt.bits in (8, 16):
        return bits.astype(np.uint8 if dt.bits == 8 else np.uint16).view(dt.np)
    # sub-byte types: one value per byte, in its low bits (as ml_dtypes holds them)
    return (bits & np.uint32((1 << dt.bits) - 1)).astype(np.uint8).view(dt.np)


@primitive("rng_bit_generator")
def rng_bit_generator(rng_algorithm, initial_state, shape, dtype="ui64"):
    """stablehlo.rng_bit_generator: ``(output_state, output)``, ``output`` of ``shape``
    and element type ``dtype`` filled with uniformly random bits, a deterministic
    function of ``initial_state`` (thread ``output_state`` into the next call).

    ``rng_algorithm`` is ``"DEFAULT"`` (= ``"PHILOX"`` here, as XLA on CPU/GPU),
    ``"THREE_FRY"`` (state ui64[2] = [key, counter]) or ``"PHILOX"`` (state ui64[2]
    or ui64[3] = [key, counter low, counter high]) (C2). Bit-exact with XLA, including
    how counters map to output elements (see the module docstring). ``dtype`` is any
    integer or floating-point type; 64-bit types take 64 random bits per element,
    narrower ones the low bits of 32. ``shape`` and ``dtype`` give the result type
    the spec writes in the op's signature.

    >>> state, bits = xo.rng_bit_generator("THREE_FRY", xo.tensor([1, 2], "ui64"), [2, 2])
    >>> state   # [1, 6]; bits: [[9236835810183407956, ...], ...] (the spec's example)
    xo.tensor([1, 6], ui64[2])
    """
    algo, st, dims, dt = rng_bit_generator_checks(rng_algorithm, initial_state, shape, dtype)
    state = [int(v) for v in st._value]
    bits, new = _bit_generator(algo, state, dims, 64 if dt.bits == 64 else 32)
    out_state = _wrap(np.array(new, np.uint64), st._dtype)
    return out_state, _wrap(_raw_to(bits, dt), dt)


def rng_bit_generator_checks(rng_algorithm, initial_state, shape, dtype):
    """rng_bit_generator's constraint checks, on types and attributes only (the CUDA
    kernel runs them too): ``(algorithm, state tensor, output dims, output dtype)``."""
    op = "rng_bit_generator"
    algo = str(rng_algorithm).upper()
    check(
        algo in _ALGORITHMS,
        op,
        "I1",
        lambda: f"rng_algorithm must be one of {', '.join(_ALGORITHMS)}, got {rng_algorithm!r}",
    )
    st = as_tensor(initial_state, "ui64", op, "initial_state")
    check(
        st._dtype.name == "ui64" and st.ndim == 1,
        op,
        "I2",
        lambda: f"initial_state must be a 1-D tensor of ui64, got {tstr(st)}",
    )
    sizes = (2,) if algo == "THREE_FRY" else (2, 3)
    check(
        st.shape[0] in sizes,
        op,
        "C2",
        lambda: (
            f"initial_state must have {' or '.join(map(str, sizes))} elements for "
            f"{algo}{' (= PHILOX)' if algo == 'DEFAULT' else ''}, got {tstr(st)}"
        ),
    )
    dims = _shape_operand(op, "I2", shape)
    try:
        dt = as_dtype(dtype)
    except TypeError as e:
        raise SpecError(op, "I2", f"output element type: {e}") from None
    check(
        dt.kind in ("si", "ui", "float"),
        op,
        "I2",
        lambda: f"output must be a tensor of integer or floating-point type, got {dt.name}",
    )
    check_nbytes(op, dims, dt)
    return algo, st, dims, dt


# ---------------------------------------------------------------------------------------
# rng: UNIFORM and NORMAL from the module-level Philox stream
# ---------------------------------------------------------------------------------------


class _Stream:
    """The hidden state of ``xo.rng``: a Philox key and a 128-bit block counter."""

    def __init__(self, seed):
        self.lock = threading.Lock()
        self.key = seed
        self.counter = 0

    def bits64(self, n):
        """n fresh uint64 values (PhiloxRngBit64's layout), advancing the counter."""
        key, counter = self.reserve(n)
        return philox_bits(key, counter, (n,), 64)[0]

    def reserve(self, n):
        """(key, counter) of the next n uint64 values, the counter advanced past them (a
        device kernel draws the same values from these two numbers)."""
        with self.lock:
            key, counter = self.key, self.counter
            self.counter = (counter + -(-n // 2)) & ((1 << 128) - 1)
        return key, counter


_STREAM = _Stream(0)


def random_seed(seed):
    """Reset the stream ``xo.rng`` (and ``rng_uniform`` / ``rng_normal``) draw from:
    Philox key ``seed`` (an int, taken modulo 2**64), counter 0. The same seed gives
    the same sequence of results on every run and machine.

    >>> xo.random_seed(0); a = xo.rng(0.0, 1.0, [3], "UNIFORM")
    >>> xo.random_seed(0); b = xo.rng(0.0, 1.0, [3], "UNIFORM")   # b equals a
    """
    if isinstance(seed, Tensor):
        seed = int(seed)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise SpecError("random_seed", "I1", f"seed must be an integer, got {seed!r}")
    with _STREAM.lock:
        _STREAM.key = int(seed) & _M64
        _STREAM.counter = 0


def _shape_operand(op, label, shape):
    """``shape`` (a sequence of ints or a 1-D integer tensor) as a tuple of ints >= 0."""
    if isinstance(shape, Tensor):
        ok = shape.ndim == 1 and shape._dtype.kind in ("si", "ui")
        vals = shape._value.astype(np.int64).tolist() if ok else None
    else:
        try:
            arr = np.asarray(shape)
            ok = arr.ndim == 1 and (arr.size == 0 or arr.dtype.kind in "iu")
            vals = [int(v) for v in arr] if ok else None
        except (TypeError, ValueError):
            ok, vals = False, None
    check(
        ok and all(v >= 0 for v in vals),
        op,
        label,
        lambda: f"shape must be a 1-D sequence of non-negative integers, got {shape!r}",
    )
    return tuple(vals)


_TWO_M53 = 2.0**-53


def _unit_uniform(n):
    """n float64 values k * 2**-53, k uniform in [0, 2**53): uniform on [0, 1)."""
    return (_STREAM.bits64(n) >> np.uint64(11)).astype(np.float64) * _TWO_M53


def _largest_below(b, dt):
    """The largest value of element type dt below the 0-d holder value b."""
    v = np.asarray(b, dt.np).reshape(1)
    return np.nextafter(v, np.array([dt.min], dt.np))[0]  # (some f8 types have no -inf)


def _uniform_float(a, b, shape, dt):
    n = int(np.prod(shape, dtype=np.int64))
    lo, hi = float(compute(a)), float(compute(b))
    u = _unit_uniform(n)
    with np.errstate(all="ignore"):
        width = hi - lo
        v = lo + u * width if np.isfinite(width) else lo * (1 - u) + hi * u
    out = from_compute(v, dt) if dt.np != np.float64 else v
    # rounding to the element type may reach b: the interval is [a, b)
    top = _largest_below(b._value, dt)
    out = np.where(out.astype(dt.compute) >= np.asarray(top, dt.np).astype(dt.compute), top, out)
    out = np.where(out.astype(dt.compute) < compute(a), a._value, out)
    return np.asarray(out, dt.np).reshape(shape)


def _uniform_int(a, b, shape, dt):
    n = int(np.prod(shape, dtype=np.int64))
    lo, hi = int(compute(a)), int(compute(b))
    span = np.uint64(hi - lo)  # in (0, 2**64): fits
    offset = _STREAM.bits64(n) % span  # bias below 2**-64 * span: negligible
    v = np.uint64(lo & _M64) + offset  # wraps modulo 2**64 back into [lo, hi)
    if dt.kind == "si":
        v = v.view(np.int64)
    if dt.bits < 8:
        return v.astype(dt.compute).astype(dt.np).reshape(shape)
    return v.astype(dt.np).reshape(shape)


def _normal(mu, sigma, shape, dt):
    """Box-Muller over pairs of 53-bit uniforms; mu + sigma * z in float64, rounded once."""
    n = int(np.prod(shape, dtype=np.int64))
    pairs = -(-n // 2)
    bits = _STREAM.bits64(2 * pairs) >> np.uint64(11)
    u1 = (bits[0::2].astype(np.float64) + 1.0) * _TWO_M53  # (0, 1]: log never sees 0
    u2 = bits[1::2].astype(np.float64) * _TWO_M53
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(2 * pairs)
    z[0::2] = r * np.cos(2 * np.pi * u2)
    z[1::2] = r * np.sin(2 * np.pi * u2)
    with np.errstate(all="ignore"):
        v = float(compute(mu)) + float(compute(sigma)) * z[:n]
    return (from_compute(v, dt) if dt.np != np.float64 else v).reshape(shape)


def rng_checks(op, a, b, shape, rng_distribution, names):
    """The checks of rng / rng_uniform / rng_normal (the CUDA kernels run them too, on
    host copies of the two 0-d parameters): ``(a, b, dims, element type, distribution)``."""
    x, y = operands(op, a, b, names=names)
    dist = str(rng_distribution).upper()
    check(
        dist in ("UNIFORM", "NORMAL"),
        op,
        "I4",
        lambda: f"rng_distribution must be UNIFORM or NORMAL, got {rng_distribution!r}",
    )
    for t, name, label in ((x, names[0], "I1"), (y, names[1], "I2")):
        check(
            t.ndim == 0 and t._dtype.kind in ("bool", "si", "ui", "float"),
            op,
            label,
            lambda: (
                f"{name} must be a 0-d tensor of integer, boolean or floating-point "
                f"type, got {tstr(t)}"
            ),
        )
    check(
        x._dtype is y._dtype,
        op,
        "C1",
        lambda: (
            f"{names[0]} and {names[1]} must have the same element type, got "
            f"{tstr(x)} and {tstr(y)}"
        ),
    )
    check(
        dist == "UNIFORM" or x._dtype.kind == "float",
        op,
        "C2",
        lambda: f"NORMAL needs a floating-point type, got {tstr(x)}",
    )
    dims = _shape_operand(op, "C3", shape)
    dt = x._dtype
    check_nbytes(op, dims, dt)
    check_nbytes(op, dims, 16, "temporary (random 64-bit words and float64 values)")
    if dist == "NORMAL":
        sd = float(compute(y))
        if not sd >= 0:
            raise SpecError(
                op,
                "I2",
                f"NORMAL needs {names[1]} >= 0 (the spec leaves a "
                f"negative standard deviation undefined), got {sd}",
            )
    elif not compute(x) < compute(y):
        raise SpecError(
            op,
            "I2",
            f"UNIFORM needs {names[0]} < {names[1]} (the spec leaves "
            f"a >= b undefined), got {x.item()} and {y.item()}",
        )
    return x, y, dims, dt, dist


def _rng(op, a, b, shape, rng_distribution, names):
    x, y, dims, dt, dist = rng_checks(op, a, b, shape, rng_distribution, names)
    if dist == "NORMAL":
        return _wrap(_normal(x, y, dims, dt), dt)
    if dt.kind == "float":
        return _wrap(_uniform_float(x, y, dims, dt), dt)
    if dt.kind == "bool":  # [False, True) holds only False
        return _wrap(np.zeros(dims, np.bool_), dt)
    return _wrap(_uniform_int(x, y, dims, dt), dt)


@primitive("rng", creation=True)
def rng(a, b, shape, rng_distribution):
    """stablehlo.rng: a tensor of ``shape`` with random numbers of a's element type:
    ``"UNIFORM"`` on [a, b) (integers: each value in [a, b) equally likely),
    ``"NORMAL"`` with mean a and standard deviation b (floats only, C2).

    Numbers come from the module-level stream seeded by :func:`xops.random_seed`
    (deterministic: same seed, same results). Floats: a 53-bit uniform u gives
    a + u (b - a), rounded once to the element type and kept below b; NORMAL uses
    Box-Muller. a >= b (UNIFORM) and b < 0 (NORMAL) are undefined in the spec and
    errors here.

    >>> xo.random_seed(0)
    >>> xo.rng(xo.tensor(0, "i32"), xo.tensor(2, "i32"), [3, 3], "UNIFORM")   # 0s and 1s
    xo.tensor([[1, 0, 0],
               [1, 1, 1],
               [1, 1, 0]], i32[3,3])
    """
    return _rng("rng", a, b, shape, rng_distribution, ["a", "b"])


@primitive("rng_uniform", spec="xla", creation=True)
def rng_uniform(a, b, shape):
    """XLA RngUniform: ``rng(a, b, shape, "UNIFORM")`` — uniform on [a, b).

    >>> xo.rng_uniform(0.0, 1.0, [2, 2])   # f32[2,2] in [0, 1)
    xo.tensor(..., f32[2,2])
    """
    return _rng("rng_uniform", a, b, shape, "UNIFORM", ["a", "b"])


@primitive("rng_normal", spec="xla", creation=True)
def rng_normal(mu, sigma, shape):
    """XLA RngNormal: ``rng(mu, sigma, shape, "NORMAL")`` — normal with mean ``mu`` and
    standard deviation ``sigma`` (floating-point types).

    >>> xo.rng_normal(0.0, 1.0, [1000])   # f32[1000], mean ~0, std ~1
    xo.tensor(..., f32[1000])
    """
    return _rng("rng_normal", mu, sigma, shape, "NORMAL", ["mu", "sigma"])
