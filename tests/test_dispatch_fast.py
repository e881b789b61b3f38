"""The dispatch fast path (xops.ops._core.fast_binary) and the threaded transcendental
ufuncs (xops.kernels.elementwise.threaded_unary): same results, same errors, same
recording as the full path."""

import numpy as np
import pytest

import xops as xo
import xops.numpy as xnp
from xops.kernels import elementwise as K
from xops.kernels import transcendental as T
from xops.tensor import _wrap

OPS = [(xo.add, np.add), (xo.subtract, np.subtract), (xo.multiply, np.multiply)]


def _full(op, *args):
    """``op(*args)`` with its fast path switched off: every check runs."""
    fast, op._fast = op._fast, None
    try:
        return op(*args)
    finally:
        op._fast = fast


def _same_tensor(a, b):
    assert a.dtype is b.dtype and a.shape == b.shape
    assert a._value.tobytes() == b._value.tobytes()
    assert not a._value.flags.writeable and not b._value.flags.writeable


@pytest.mark.parametrize(
    "op,ufunc,dt",
    [
        (op, u, dt)
        for op, u in OPS
        for dt in ["f32", "f64", "c64", "i8", "i32", "ui8", "ui64", "i64"]
    ]
    + [(xo.divide, np.divide, dt) for dt in ["f32", "f64"]],
)
def test_fast_path_matches_full_path(op, ufunc, dt):
    rng = np.random.default_rng(1)
    x = (
        rng.integers(-100, 100, (3, 4)).astype(xo.as_dtype(dt).np)
        if dt[0] in "iu"
        else (rng.standard_normal((3, 4)) * 1e38).astype(xo.as_dtype(dt).np)
    )
    y = x[::-1].copy()
    a, b = xo.tensor(x, dt), xo.tensor(y, dt)
    assert op._fast((a, b)) is not None  # the fast path answers this call
    fast, full = op(a, b), _full(op, a, b)
    _same_tensor(fast, full)
    with np.errstate(all="ignore"):
        assert fast._value.tobytes() == ufunc(x, y).tobytes()


@pytest.mark.parametrize("op,ufunc", OPS + [(xo.divide, np.divide)])
@pytest.mark.parametrize(
    "dt,s",
    [
        ("f32", 0.1),
        ("f32", -3),
        ("f64", 1e300),
        ("f32", float("nan")),
        ("i8", 100),
        ("i8", -128),
        ("ui8", 7),
        ("i32", 5),
        ("f32", 1e39),
        ("f32", 1 << 30),
        ("i8", 300),
        ("ui8", -1),
        ("i32", 2.5),
        ("f32", True),
        ("c64", 1.5),
    ],
)
def test_weak_scalars(op, ufunc, dt, s):
    a = xo.tensor(np.array([1, 2, 3]).astype(xo.as_dtype(dt).np), dt)
    for args in ((a, s), (s, a), (xo.reshape(a[:1], ()), s)):
        try:
            want = _full(op, *args)
        except xo.SpecError as e:
            with pytest.raises(xo.SpecError) as got:
                op(*args)
            assert str(got.value) == str(e)
            continue
        _same_tensor(op(*args), want)


def test_errors_unchanged():
    a, b = xo.tensor([1.0, 2.0]), xo.tensor([1.0, 2.0, 3.0])
    cases = [
        (a, b),
        (a, xo.tensor([1, 2], "i32")),
        (xo.tensor([True]), xo.tensor([True])),
        (a,),
        (a, b, b),
        (a, "x"),
    ]
    for args in cases:
        try:
            _full(xo.add, *args)
        except (xo.SpecError, TypeError) as e:
            with pytest.raises(type(e)) as got:
                xo.add(*args)
            assert str(got.value) == str(e)
        else:
            _same_tensor(xo.add(*args), _full(xo.add, *args))


def test_gradients_still_recorded():
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    y = xo.tensor([3.0, 5.0])
    out = xo.multiply(x, y) + x * 2.0 + xo.add(y, 1.0)
    out.backward(xo.tensor([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(out.numpy(), [9.0, 20.0])


def test_debug_nans_still_checked():
    a = xo.tensor([np.inf], "f32")
    xo.config.debug_nans = True
    try:
        with pytest.raises(xo.SpecError, match="NaN"):
            xo.add(a, -a)
        with pytest.raises(xo.SpecError, match="NaN"):
            a + (-a)
    finally:
        xo.config.debug_nans = False


def test_operators_and_xnp_take_the_fast_path_with_same_results():
    a, b = xo.tensor([1.5, -2.0], "f64"), xo.tensor([0.25, 4.0], "f64")
    _same_tensor(a + b, _full(xo.add, a, b))
    _same_tensor(a - b, _full(xo.subtract, a, b))
    _same_tensor(a * b, _full(xo.multiply, a, b))
    _same_tensor(xnp.add(a, b), _full(xo.add, a, b))
    _same_tensor(2.0 * a, _full(xo.multiply, 2.0, a))
    _same_tensor(a / b, _full(xo.divide, a, b))
    _same_tensor(1 / a, _full(xo.divide, 1, a))
    i = xo.tensor([7, -7], "i32")
    _same_tensor(xo.divide(i, i), _full(xo.divide, i, i))  # integer divide: the kernel
    assert xo.divide._fast((i, i)) is None


@pytest.mark.parametrize("ufunc", sorted(K.THREADED_UFUNCS, key=lambda f: f.__name__))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_unary_bit_identical_for_any_thread_count(ufunc, dtype, monkeypatch):
    rng = np.random.default_rng(3)
    n = K.THREADED_THRESHOLD + 12345  # not a whole number of blocks
    x = (rng.standard_normal(n) * 30).astype(dtype)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30]
    with np.errstate(all="ignore"):
        want = ufunc(x)
    for threads in (1, 2, 3, 5):
        monkeypatch.setattr(K, "_threads", lambda t=threads: t)
        with np.errstate(all="ignore"):
            got = K.threaded_unary(ufunc, x.reshape(-1, 5) if n % 5 == 0 else x)
        assert got.reshape(-1).tobytes() == want.tobytes(), threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_ops_quiet_and_exact(monkeypatch, dtype):
    # f64 runs NumPy's ufuncs in threaded blocks; f32 runs xops' own kernels
    # (tests/test_transcendental.py): tanh evaluated in float64, bit-equal to float64
    # NumPy rounded once; exp in float32, within 1 ulp of it and the serial loop's bits
    monkeypatch.setattr(K, "_threads", lambda: 3)
    x = np.linspace(-200, 200, K.THREADED_THRESHOLD * 2 + 7, dtype=dtype)
    t = xo.tensor(x)
    with np.errstate(all="ignore"):  # the pytest run turns warnings into errors
        w = x.astype(np.float64)
        want_exp, want_tanh = np.exp(w).astype(dtype), np.tanh(w).astype(dtype)
    got_exp = xo.exponential(t)._value  # overflows: no warning
    if dtype == np.float32:
        np.testing.assert_array_max_ulp(got_exp, want_exp, maxulp=1)
        want_exp = np.empty_like(x)
        T._exp_span(x, want_exp, np.int64(0), np.int64(x.size))
    assert got_exp.tobytes() == want_exp.tobytes()
    assert xo.tanh(t)._value.tobytes() == want_tanh.tobytes()
    assert xo.exponential(t).shape == (x.size,)


_FORK_CHILD = """
import os, numpy as np
import xops.kernels.elementwise as K
K._threads = lambda: 2
x = np.linspace(-5, 5, K.THREADED_THRESHOLD + 3, dtype=np.float32)
want = np.exp(x)
assert K.threaded_unary(np.exp, x).tobytes() == want.tobytes()  # the parent's pool
pid = os.fork()
if pid == 0:  # the child: a pool of its own, no hang on the parent's dead threads
    os._exit(0 if K.threaded_unary(np.exp, x).tobytes() == want.tobytes() else 1)
_, status = os.waitpid(pid, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_threaded_unary_after_fork():
    """In a fresh interpreter: forking the test process itself is unsafe once JAX or
    PyTorch (imported by other tests) run threads of their own."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", _FORK_CHILD], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]


def test_labelled_errors_after_the_fast_path_served_the_op():
    """The fast path validates each call (element types by identity, shapes compared):
    calls that served it before do not let a bad call through, and one that fails
    leaves it serving the next good call."""
    from conftest import raises_spec

    a = xo.tensor(np.ones(3, np.float32))
    for _ in range(3):
        _same_tensor(xo.add(a, a), _full(xo.add, a, a))
        _same_tensor(a + a, _full(xo.add, a, a))
    with raises_spec("add", "C1") as e:
        xo.add(a, xo.tensor(np.ones(4, np.float32)))
    assert "f32[3]" in str(e.value) and "f32[4]" in str(e.value)
    with raises_spec("add", "C1"):
        xo.add(a, xo.tensor(np.ones(3, np.float64)))
    with raises_spec("subtract", "I1"):
        xo.subtract(xo.tensor([True, False, True]), xo.tensor([True, True, True]))
    with raises_spec("add", "I2"):
        xo.add(a, 1j)  # a complex weak scalar cannot take f32 (rhs: the second input)
    with raises_spec("divide", "I1"):
        xo.divide(xo.tensor([True]), xo.tensor([True]))
    h = xo.tensor(np.ones(3), "bf16")  # narrow: not held as computed, the full path
    assert xo.add._fast((h, h)) is None
    np.testing.assert_array_equal(xo.add(h, h).numpy().astype(np.float32), [2, 2, 2])
    _same_tensor(xo.add(a, a), _full(xo.add, a, a))


def test_quiet_error_state_leaves_the_callers_alone_and_is_thread_safe():
    """The fast path runs float ufuncs in a context of its own with every floating-point
    condition ignored: overflows give inf without a warning, the caller's np.errstate
    is untouched, and threads entering at once (large ufuncs let go of the GIL) still
    get their results, quietly."""
    import threading

    big = xo.tensor(np.full(1 << 18, 3e38, np.float32))
    want = np.full(1 << 18, np.inf, np.float32)
    with np.errstate(over="raise"):
        assert xo.add(big, big)._value.tobytes() == want.tobytes()
        with pytest.raises(FloatingPointError):
            np.add(big._value, big._value)  # the caller's state is still in force
    errors, results = [], []

    def work():
        try:
            for _ in range(20):
                results.append(xo.multiply(big, big)._value.tobytes() == want.tobytes())
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80 and all(results)


def test_dot_general_validated_signatures_same_results_and_errors():
    from xops.ops import linalg

    rng = np.random.default_rng(12)
    a = xo.tensor(rng.standard_normal((2, 3, 4)), "f32")
    b = xo.tensor(rng.standard_normal((2, 4, 5)), "f32")
    dims = dict(
        lhs_batching_dimensions=[0],
        rhs_batching_dimensions=[0],
        lhs_contracting_dimensions=[2],
        rhs_contracting_dimensions=[1],
    )
    want = np.matmul(np.asarray(a), np.asarray(b))
    first = xo.dot_general(a, b, **dims)  # checks run, the signature is kept
    again = xo.dot_general(a, b, **dims)  # a kept signature: the same bits
    np.testing.assert_array_equal(np.asarray(first), want)
    _same_tensor(first, again)
    assert any(k[2:4] == ((2, 3, 4), (2, 4, 5)) for k in linalg._CHECKED)
    # the same shapes with another element type, or bad attributes: checked, as before
    with pytest.raises(xo.SpecError, match=r"dot_general \(C13\)"):
        xo.dot_general(a, xo.tensor(np.asarray(b), "f64"), **dims)
    with pytest.raises(xo.SpecError, match=r"dot_general \(C10\)"):
        xo.dot_general(a, b, **dict(dims, rhs_contracting_dimensions=[2]))
    i = xo.tensor(np.arange(24).reshape(2, 3, 4), "i32")
    j = xo.tensor(np.arange(40).reshape(2, 4, 5), "i32")
    assert xo.dot_general(i, j, **dims).dtype.name == "i32"
    np.testing.assert_array_equal(
        np.asarray(xo.dot_general(i, j, **dims)), np.matmul(np.asarray(i), np.asarray(j))
    )
    # the tape keeps its own attribute lists: a rule changing them changes no later call
    w = xo.tensor(np.asarray(b), "f32", requires_grad=True)
    out = xo.dot_general(a, w, **dims)
    out._node.args[5].append(0)  # (rhs_contracting_dimensions)
    _same_tensor(xo.dot_general(a, b, **dims), first)


@pytest.mark.parametrize("dt", ["f32", "f64", "i8", "i32", "ui64", "c64", "f16"])
def test_select_plain_path_matches_the_full_path(dt, monkeypatch):
    from xops.ops.elementwise import arithmetic

    rng = np.random.default_rng(13)
    shape = (4, 8, 9, 10)  # above _SELECT_KERNEL_MIN elements
    np_dt = xo.as_dtype(dt).np
    if dt[0] in "iu":
        a = rng.integers(0, 100, shape).astype(np_dt)
    else:
        a = (rng.standard_normal(shape) * 5).astype(np_dt)
        flat = a.reshape(-1)
        flat[:3] = [np.nan, -0.0, np.inf]
    b = a[::-1].copy()
    p = xo.tensor(rng.random(shape) < 0.5)
    x, y = xo.tensor(a, dt), xo.tensor(b, dt)
    calls = [(p, x, y), (p, 0, x), (p, x, 0), (p, y, y)]
    if dt[0] in "fc":
        calls.append((p, x, 1.5))
    calls += [(p, _wrap(np.asfortranarray(a), x.dtype), y)]  # not C-contiguous
    got = [(xo.select(*c), arithmetic._select_fast(c) is not None) for c in calls]
    plain = dt != "f16"  # (f16 is computed in f32: the full path)
    weak = plain and dt != "c64"  # (a weak scalar for c64: the full path converts it)
    want = [plain, weak, weak, plain] + ([weak] if dt[0] in "fc" else []) + [False]
    assert [answered for _, answered in got] == want
    monkeypatch.setattr(arithmetic, "_select_plain", lambda *a: None)
    for (fast, _), c in zip(got, calls):
        _same_tensor(fast, _full(xo.select, *c))
    # gradients are recorded through the plain path too
    w = xo.tensor(a.astype(np.float64) if dt[0] == "f" else np.ones(shape), requires_grad=True)
    out = xo.select(p, 0.0, w)
    assert out._node is not None and out._node.op == "select"
    xo.reduce(out, 0.0, [0, 1, 2, 3], xo.add).backward()
    np.testing.assert_array_equal(np.asarray(w.grad), np.where(np.asarray(p), 0.0, 1.0))


def test_select_plain_path_leaves_errors_and_small_calls_alone():
    from xops.ops.elementwise import arithmetic

    x = xo.tensor(np.ones((50, 50), np.float32))
    p = xo.tensor(np.ones((50, 50), bool))
    assert arithmetic._select_fast((p, x, 0)) is not None
    assert arithmetic._select_fast((p[:10], x[:10], 0)) is None  # small: np.where
    assert arithmetic._select_fast((p, x, 2**40)) is None  # not exact in f32: full path
    with pytest.raises(xo.SpecError, match=r"select \(C2\)"):
        xo.select(p, x, xo.tensor(np.ones((50, 50)), "f64"))
    with pytest.raises(xo.SpecError, match=r"select \(C1\)"):
        xo.select(xo.tensor(np.ones((50, 49), bool)), x, x)
    with pytest.raises(xo.SpecError, match=r"select \(I1\)"):
        xo.select(xo.tensor(np.ones((50, 50), np.int32)), x, x)


@pytest.mark.parametrize("dt", ["f32", "f64", "i8", "ui32", "c64"])
def test_compare_fast_path_matches_the_full_path(dt):
    rng = np.random.default_rng(14)
    np_dt = xo.as_dtype(dt).np
    if dt[0] in "iu":
        a = rng.integers(0, 5, 40).astype(np_dt)
    else:
        a = rng.integers(-2, 3, 40).astype(np_dt)
        a[:4] = [np.nan, -0.0, 0.0, np.inf]
    x, y = xo.tensor(a, dt), xo.tensor(a[::-1].copy(), dt)
    for direction in ["EQ", "NE", "GE", "GT", "LE", "LT"]:
        if dt == "c64" and direction not in ("EQ", "NE"):
            continue
        for rhs in (y, 0, 2):
            answered = xo.compare._fast((x, rhs, direction)) is not None
            assert answered or (dt == "c64" and rhs is not y)  # (c64: weak scalars convert)
            fast, full = xo.compare(x, rhs, direction), _full(xo.compare, x, rhs, direction)
            assert fast.dtype.name == "i1"
            _same_tensor(fast, full)
    w = xo.tensor(np.arange(5.0) - 2, "f32", requires_grad=True)
    out = xo.compare(w, 0, "LE")  # a gradient input: the i1 result is never recorded
    assert xo.compare._fast((w, 0, "LE")) is not None and out._node is None
    assert not out.requires_grad


def test_compare_fast_path_leaves_other_calls_and_errors_alone():
    x = xo.tensor(np.arange(4.0), "f32")
    assert xo.compare._fast((x, 1.0, "le")) is None  # spelled otherwise: the full path
    np.testing.assert_array_equal(np.asarray(xo.compare(x, 1.0, "le")), [1, 1, 0, 0])
    assert xo.compare._fast((x, 2**40, "LE")) is None  # not exact in f32
    assert xo.compare._fast((x, x, "LE", "TOTALORDER")) is None
    assert xo.compare._fast((xo.tensor(np.ones(4), "bf16"), 1.0, "LE")) is None
    with pytest.raises(xo.SpecError, match=r"compare \(C1\)"):
        xo.compare(x, xo.tensor(np.arange(4.0), "f64"), "LE")
    with pytest.raises(xo.SpecError, match=r"compare \(C2\)"):
        xo.compare(x, xo.tensor(np.arange(3.0), "f32"), "LE")
    with pytest.raises(xo.SpecError, match=r"compare \(I3\)"):
        xo.compare(x, x, "LTE")


def test_fast_binary_builds_the_tensor_wrap_builds():
    # fast_binary inlines _wrap: every slot of its result must be what _wrap gives, so
    # a slot added to Tensor later cannot be left unset on the fast path
    from xops.tensor import Tensor, _wrap

    a, b = xo.tensor(np.arange(3.0, dtype=np.float32)), xo.tensor(np.ones(3, np.float32))
    fast = xo.add(a, b)
    ref = _wrap(np.add(a.numpy(), b.numpy()), a.dtype)
    for slot in Tensor.__slots__:
        if slot == "__weakref__":
            continue
        got, want = getattr(fast, slot), getattr(ref, slot)
        if slot == "_value":
            assert type(got) is np.ndarray and not got.flags.writeable
            np.testing.assert_array_equal(got, want)
        else:
            assert got is want or got == want, slot


def test_quiet_is_errstate_ignore_and_restores():
    """``_core.quiet()`` (the elementwise ops' error state): nothing warns or raises
    inside, the caller's state comes back after (an exception too, nested blocks too),
    and an op called under the user's ``np.errstate(all="raise")`` raises nothing."""
    from xops.ops._core import quiet

    ignore = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}
    with np.errstate(all="raise"):
        with quiet():
            assert np.geterr() == ignore
            with quiet():
                assert np.geterr() == ignore
            assert np.geterr() == ignore
            assert np.isinf(np.array(1.0) / np.array(0.0))
        assert np.geterr()["divide"] == "raise"
        with pytest.raises(FloatingPointError):
            np.array(1.0) / np.array(0.0)
        with pytest.raises(KeyError), quiet():
            raise KeyError("x")
        assert np.geterr()["invalid"] == "raise"
        got = xo.log(xo.tensor([-1.0, 0.0, 1.0]))
        np.testing.assert_array_equal(got.numpy(), [np.nan, -np.inf, 0.0])
        np.testing.assert_array_equal(xo.exponential(xo.tensor([1000.0], "f64")).numpy(), [np.inf])
        np.testing.assert_array_equal(xo.negate(xo.tensor([1.0, -0.0])).numpy(), [-1.0, 0.0])
