"""reduce and map: the spec examples, the kernels and the generic (vectorised) path
against the naive references over an attribute zoo, parallel == serial bit for bit,
jax.lax.reduce cross-checks, and one negative test per constraint label."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.kernels import reduction as KR
from xops.ops import reduction as R
from xops.ops._bodies import binary_op_name, comparison_direction
from conftest import assert_tensor, raises_spec


def generic_add(a, b):  # not recognised: two calls
    return xo.add(xo.multiply(a, 1), b)


def generic_max(a, b):
    return xo.maximum(xo.maximum(a, b), a)


def argmax_body(av, ai, bv, bi):
    """(value, index) pairs: the larger value, ties to the lower index."""
    pick_a = xo.or_(
        xo.compare(av, bv, "GT"), xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT"))
    )
    return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)


def small_ints(shape, dtype, rng, lo=-4, hi=5):
    return xo.tensor(rng.integers(lo, hi, shape), dtype)


# ---------------------------------------------------------------------------------------
# body recognition
# ---------------------------------------------------------------------------------------


def test_body_recognition():
    import xops.ops.elementwise as ew
    from xops import maximum

    def closure():
        mod = xo
        return lambda a, b: mod.minimum(a, b)

    def named(x, y):
        return xo.or_(x, y)

    assert binary_op_name(xo.add) == "add"
    assert binary_op_name(lambda a, b: xo.multiply(a, b)) == "multiply"
    assert binary_op_name(lambda p, q: maximum(p, q)) == "maximum"
    assert binary_op_name(lambda a, b: ew.and_(a, b)) == "and"
    assert binary_op_name(closure()) == "minimum"
    assert binary_op_name(named) == "or"
    for not_it in (
        generic_add,
        lambda a, b: xo.add(b, a),
        lambda a, b: a + b,
        lambda a, b, c=0: xo.add(a, b),
        lambda *a: xo.add(*a),
        sum,
        lambda a, b: xo.add(a, a),
        lambda a, b: xo.compare(a, b, "GE"),
    ):
        assert binary_op_name(not_it) is None
    assert comparison_direction(lambda a, b: xo.compare(a, b, "GE")) == "GE"
    assert comparison_direction(lambda a, b: xo.compare(a, b, comparison_direction="lt")) == "LT"
    for not_it in (
        lambda a, b: xo.compare(b, a, "GE"),
        xo.compare,
        xo.add,
        lambda a, b: xo.compare(a, b, "GE", "TOTALORDER"),
        lambda a, b: xo.not_(xo.compare(a, b, "LT")),
    ):
        assert comparison_direction(not_it) is None


def test_tagged_bodies_say_what_they_are():
    from xops.ops._bodies import Body, compare_call, is_overwrite

    add = Body.builtin("add")
    assert binary_op_name(add) == "add" and comparison_direction(add) is None
    ge = Body.compare("ge")
    assert comparison_direction(ge) == "GE" and binary_op_name(ge) is None
    assert compare_call(Body.compare("LT", "TOTALORDER")) == ("LT", "TOTALORDER")
    assert comparison_direction(Body.compare("LT", "TOTALORDER")) is None
    assert compare_call(ge, 4) is None  # a sort comparator over 2 inputs takes 4 values
    assert is_overwrite(Body.overwrite()) and is_overwrite(lambda a, b: b)
    assert not is_overwrite(lambda a, b: a) and not is_overwrite(add)
    # a traced body (a StableHLO region) is never recognised, whatever it calls
    traced = Body.traced(xo.add, "region_of_stablehlo_reduce")
    assert binary_op_name(traced) is None and compare_call(traced) is None
    assert not is_overwrite(Body.traced(lambda a, b: b, "r"))
    # they run like the functions they stand for, on the kernels and the generic path
    x = xo.tensor(np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], np.float32))
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, 0.0, [1], add)), [4.0, 2.5])
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, 0.0, [1], traced)), [4.0, 2.5])
    np.testing.assert_array_equal(np.asarray(ge(x, x)), np.ones((2, 3), bool))
    assert "region_of_stablehlo_reduce" in repr(traced)
    with pytest.raises(ValueError):
        Body.builtin("divide")
    with pytest.raises(ValueError):
        Body.compare("GEQ")


# ---------------------------------------------------------------------------------------
# reduce: spec example, zoo against the reference
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [xo.add, lambda a, b: xo.add(a, b), generic_add])
def test_reduce_spec_example(body):
    out = xo.reduce(xo.tensor([[0, 1, 2, 3, 4, 5]], "i64"), xo.tensor(0, "i64"), [1], body)
    assert_tensor(out, [15], "i64")


REDUCE_ZOO = [  # shape, dimensions
    ((2, 3, 4), [1]),
    ((2, 3, 4), [0, 2]),
    ((2, 3, 4), [2, 0]),
    ((2, 3, 4), []),
    ((2, 3, 4), [2, 1, 0]),
    ((3, 0, 2), [1]),
    ((3, 0, 2), [0]),
    ((), []),
    ((5,), [0]),
    ((4, 1, 3), [0, 2]),
    ((1, 5, 1), [1]),
    ((2, 3, 2, 2), [1, 3]),
    ((3, 7), [0]),
]


@pytest.mark.parametrize("shape,dims", REDUCE_ZOO, ids=str)
@pytest.mark.parametrize(
    "body",
    [xo.add, xo.maximum, xo.multiply, generic_add],
    ids=["add", "maximum", "multiply", "generic"],
)
def test_reduce_against_reference(shape, dims, body):
    rng = np.random.default_rng(len(shape) * 10 + len(dims))
    x = small_ints(shape, "f32", rng, -2, 3)
    init = {xo.multiply: 1.0, xo.maximum: float("-inf")}.get(body, 0.0)
    got = xo.reduce(x, init, dims, body)
    assert_tensor(got, R.reduce_reference(x, init, dims, body).numpy(), "f32")


# every kernel element type (f32, f64, i64, ui64) and op at least once, with few
# specialisations (CI compiles them cold): i64 add/and/or, ui64 maximum, f64 minimum,
# f32 add/maximum/multiply (the zoo)
@pytest.mark.parametrize(
    "dtype,body,init",
    [
        ("i64", xo.add, 0),
        ("i8", xo.add, 0),
        ("i4", xo.add, 0),
        ("ui64", xo.maximum, 0),
        ("ui8", xo.and_, 255),
        ("i16", xo.or_, 0),
        ("i1", xo.and_, True),
        ("i1", xo.or_, False),
        ("i1", xo.add, False),
        ("i1", xo.minimum, True),
        ("f64", xo.minimum, float("inf")),
        ("bf16", xo.maximum, float("-inf")),
        ("c64", xo.add, 0),
        ("i8", generic_add, 0),
    ],
)
def test_reduce_element_types(dtype, body, init):
    rng = np.random.default_rng(1)
    dt = xo.as_dtype(dtype)
    if dt.kind == "bool":
        x = xo.tensor(rng.integers(0, 2, (3, 20)).astype(bool))
    elif dt.kind == "ui":
        x = xo.tensor(rng.integers(0, 200, (3, 20)), dtype)
    else:
        x = small_ints((3, 20), dtype, rng, -7, 8)
    for dims in ([1], [0], [0, 1]):
        got = xo.reduce(x, init, dims, body)
        assert_tensor(got, R.reduce_reference(x, init, dims, body).numpy(), dtype)


def test_reduce_integer_wraparound():
    x = xo.tensor([[100, 100, 100]], "i8")
    assert_tensor(xo.reduce(x, 0, [1], xo.add), [44], "i8")  # 300 mod 256
    x4 = xo.tensor([[7, 1]], "i4")
    assert_tensor(xo.reduce(x4, 0, [1], xo.add), xo.tensor([-8], "i4").numpy(), "i4")


def test_reduce_nan_and_signed_zero():
    x = xo.tensor([[-0.0, 0.0, -0.0], [1.0, float("nan"), 2.0], [-0.0, -0.0, -0.0]])
    assert_tensor(xo.reduce(x, float("-inf"), [1], xo.maximum), [0.0, np.nan, -0.0])
    x64 = xo.tensor(x.numpy().astype(np.float64))
    assert_tensor(xo.reduce(x64, float("inf"), [1], xo.minimum), [-0.0, np.nan, -0.0], "f64")
    assert_tensor(xo.reduce(x, float("-inf"), [1], generic_max), [0.0, np.nan, -0.0])
    # the init value counts once: -0.0 + ... with init +0.0 is +0.0
    assert_tensor(xo.reduce(x[2:], 0.0, [1], xo.add), [0.0])
    assert_tensor(xo.reduce(x[2:], -0.0, [1], xo.add), [-0.0])


def test_reduce_non_identity_init_counts_once():
    x = xo.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    for body in (xo.add, generic_add):
        assert_tensor(xo.reduce(x, 10.0, [1], body), [16.0, 32.0, 48.0])
        assert_tensor(xo.reduce(x, 10.0, [0, 1], body), 76.0)


def test_reduce_empty_extent_gives_init():
    x = xo.tensor(np.zeros((2, 0, 3), np.float32))
    assert_tensor(xo.reduce(x, 5.0, [1], xo.add), np.full((2, 3), 5.0, np.float32))
    assert_tensor(xo.reduce(x, 5.0, [1], generic_add), np.full((2, 3), 5.0, np.float32))
    vals, idx = xo.reduce(
        [x, xo.tensor(np.zeros((2, 0, 3), np.int64))], [-1.0, 7], [1], argmax_body
    )
    assert_tensor(vals, np.full((2, 3), -1.0, np.float32))
    assert_tensor(idx, np.full((2, 3), 7), "i64")


# ---------------------------------------------------------------------------------------
# variadic reduce, wider bodies
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,dims", [((17,), [0]), ((4, 9), [1]), ((4, 9), [0]), ((3, 4, 5), [0, 2])], ids=str
)
def test_variadic_argmax_ties_to_lowest_index(shape, dims):
    rng = np.random.default_rng(2)
    v = rng.integers(0, 3, shape).astype(np.float32)  # many ties
    iota = (
        np.arange(int(np.prod(shape))).reshape(shape)
        if len(dims) > 1
        else np.broadcast_to(
            np.arange(shape[dims[0]]).reshape(
                [-1 if d == dims[0] else 1 for d in range(len(shape))]
            ),
            shape,
        )
    )
    iota = np.ascontiguousarray(iota).astype(np.int64)
    got = xo.reduce([xo.tensor(v), xo.tensor(iota)], [float("-inf"), 0], dims, argmax_body)
    want = R.reduce_reference(
        [xo.tensor(v), xo.tensor(iota)], [float("-inf"), 0], dims, argmax_body
    )
    assert isinstance(got, tuple) and len(got) == 2
    assert_tensor(got[0], want[0].numpy(), "f32")
    assert_tensor(got[1], want[1].numpy(), "i64")
    if len(dims) == 1:
        assert_tensor(got[1], np.argmax(v, axis=dims[0]), "i64")


def test_body_may_compute_in_a_wider_type():
    # C6: bf16 inputs, an f32 body: the result is f32 and nothing rounds to bf16
    x = xo.tensor([256.0, 1.0, 1.0, 1.0, 1.0], "bf16")

    def f32_add(a, b):
        return xo.add(xo.convert(a, "f32"), xo.convert(b, "f32"))

    got = xo.reduce(x, 0.0, [0], f32_add)
    assert_tensor(got, np.float32(260.0), "f32")
    assert_tensor(R.reduce_reference(x, 0.0, [0], f32_add), np.float32(260.0), "f32")
    # the bf16 fast path accumulates in f32 and rounds once (XLA); a bf16 body rounds
    # every step: 1 + 2**-9 = 1 in bf16
    y = xo.tensor([1.0, 2.0**-9, 2.0**-9, 2.0**-9, 2.0**-9], "bf16")
    assert_tensor(xo.reduce(y, 0.0, [0], xo.add), np.float32(1 + 2.0**-7), "bf16")
    assert_tensor(xo.reduce(y, 0.0, [0], generic_add), np.float32(1.0), "bf16")
    assert_tensor(R.reduce_reference(y, 0.0, [0], xo.add), np.float32(1.0), "bf16")


# ---------------------------------------------------------------------------------------
# kernel schedules on bigger inputs; fast path == generic path; parallel == serial
# ---------------------------------------------------------------------------------------

BIG = [
    ((3, 70000), [1]),
    ((1, 100001), [1]),
    ((100001,), [0]),
    ((300, 7, 40), [1]),
    ((64, 3, 50), [0]),
    ((3, 40, 5), [0, 2]),
    ((40, 5, 3), [1]),
]


@pytest.fixture
def serial_kernels(monkeypatch):
    """Big inputs on the serial kernels: the parallel variants are compiled (cold, on
    CI) only by the tests made for them."""
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)


@pytest.mark.parametrize("shape,dims", BIG, ids=str)
def test_fast_matches_generic_and_numpy(shape, dims, serial_kernels):
    rng = np.random.default_rng(3)
    v = rng.integers(-8, 9, shape).astype(np.float32)  # integer sums: exact in any order
    x = xo.tensor(v)
    want = v.sum(axis=tuple(dims))
    assert_tensor(xo.reduce(x, 0.0, dims, xo.add), want)
    assert_tensor(xo.reduce(x, 0.0, dims, generic_add), want)
    v[(0,) * len(shape)] = np.nan
    x = xo.tensor(v)
    want = v.max(axis=tuple(dims))
    assert_tensor(xo.reduce(x, float("-inf"), dims, xo.maximum), want)
    assert_tensor(xo.reduce(x, float("-inf"), dims, generic_max), want)
    xi = xo.tensor(rng.integers(-8, 9, shape))
    assert_tensor(xo.reduce(xi, 0, dims, xo.add), xi.numpy().sum(axis=tuple(dims)), "i64")


def test_float_sum_is_close_to_float64(serial_kernels):
    v = np.random.default_rng(4).standard_normal((5, 50000)).astype(np.float32)
    got = xo.reduce(xo.tensor(v), 0.0, [1], xo.add)
    assert_tensor(got, v.astype(np.float64).sum(1), exact=False, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(
    "shape,dims,body",
    [  # rows, chunked rows, columns
        ((70, 300), [1], xo.add),
        ((3, 100001), [1], xo.add),
        ((300, 70), [0], xo.add),
    ],
)
def test_parallel_equals_serial_bitwise(monkeypatch, shape, dims, body):
    x = xo.tensor(np.random.default_rng(5).standard_normal(shape).astype(np.float32))
    init = 0.0 if body is xo.add else float("-inf")
    serial = xo.reduce(x, init, dims, body)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = xo.reduce(x, init, dims, body)
    np.testing.assert_array_equal(
        np.asarray(parallel).view(np.uint32), np.asarray(serial).view(np.uint32)
    )


# ---------------------------------------------------------------------------------------
# cross-check with jax.lax.reduce
# ---------------------------------------------------------------------------------------


def test_against_jax_reduce():
    jax = pytest.importorskip("jax")
    from jax import lax

    rng = np.random.default_rng(6)
    v = rng.standard_normal((6, 7, 8)).astype(np.float32)
    for dims in ([1], [0, 2], [2, 1, 0]):
        want = lax.reduce(v, np.float32(0), lax.add, tuple(dims))
        assert_tensor(
            xo.reduce(xo.tensor(v), 0.0, dims, xo.add),
            np.asarray(want),
            exact=False,
            rtol=1e-5,
            atol=1e-5,
        )
        want = lax.reduce(v, np.float32(-np.inf), lax.max, tuple(dims))
        assert_tensor(xo.reduce(xo.tensor(v), float("-inf"), dims, xo.maximum), np.asarray(want))
    vi = rng.integers(0, 4, (5, 9)).astype(np.int32)
    idx = np.broadcast_to(np.arange(9, dtype=np.int32), (5, 9))

    def jax_argmax(a, b):
        (av, ai), (bv, bi) = a, b
        pick = (av > bv) | ((av == bv) & (ai < bi))
        return jax.numpy.where(pick, av, bv), jax.numpy.where(pick, ai, bi)

    wv, wi = lax.reduce((vi, idx), (np.int32(-1), np.int32(0)), jax_argmax, (1,))
    gv, gi = xo.reduce(
        [xo.tensor(vi), xo.tensor(np.ascontiguousarray(idx))], [-1, 0], [1], argmax_body
    )
    assert_tensor(gv, np.asarray(wv), "i32")
    assert_tensor(gi, np.asarray(wi), "i32")


# ---------------------------------------------------------------------------------------
# reduce: one negative test per constraint label
# ---------------------------------------------------------------------------------------


def test_reduce_constraints():
    x = xo.tensor(np.zeros((2, 3), np.float32))
    with raises_spec("reduce", "C1"):
        xo.reduce([x, xo.tensor(np.zeros((3, 2), np.float32))], [0.0, 0.0], [0], argmax_body)
    with raises_spec("reduce", "C2"):
        xo.reduce(x, xo.tensor(0, "i32"), [0], xo.add)
    with raises_spec("reduce", "C3"):
        xo.reduce(x, [0.0, 0.0], [0], xo.add)
    with raises_spec("reduce", "C3"):
        xo.reduce([], [], [0], xo.add)
    with raises_spec("reduce", "C4"):
        xo.reduce(x, 0.0, [2], xo.add)
    with raises_spec("reduce", "C4"):
        xo.reduce(x, 0.0, [-1], xo.add)
    with raises_spec("reduce", "C5"):
        xo.reduce(x, 0.0, [1, 1], xo.add)
    with raises_spec("reduce", "C6"):  # wrong number of results
        xo.reduce([x, x], [0.0, 0.0], [0], lambda a, b, c, d: xo.add(a, c))
    with raises_spec("reduce", "C6"):  # narrower than the inputs: not promotable
        xo.reduce(x, 0.0, [0], lambda a, b: xo.convert(xo.add(a, b), "bf16"))
    with raises_spec("reduce", "C6"):  # another kind
        xo.reduce(x, 0.0, [0], lambda a, b: xo.convert(xo.add(a, b), "i32"))
    with raises_spec("reduce", "C6"):
        xo.reduce(x, 0.0, [0], "add")
    with raises_spec("reduce", "I2"):
        xo.reduce(x, xo.tensor([0.0]), [0], xo.add)
    with raises_spec("reduce", "I3"):
        xo.reduce(x, 0.0, 0, xo.add)
    # a body that is not elementwise is caught when its result has the wrong shape
    with raises_spec("reduce", "C6"):
        xo.reduce(
            x, 0.0, [0], lambda a, b: xo.reshape(xo.add(a, b), [a.size]) if a.ndim else xo.add(a, b)
        )


# ---------------------------------------------------------------------------------------
# map
# ---------------------------------------------------------------------------------------


def test_map_spec_example():
    a = xo.tensor([[0, 1], [2, 3]], "i64")
    b = xo.tensor([[4, 5], [6, 7]], "i64")
    for body in (xo.multiply, lambda x, y: xo.multiply(x, y)):
        assert_tensor(xo.map([a, b], [0, 1], body), [[0, 5], [12, 21]], "i64")


def test_map_multi_input_and_changed_types():
    rng = np.random.default_rng(7)
    f = xo.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    i = xo.tensor(rng.integers(-3, 4, (3, 4)), "i32")
    p = xo.tensor(rng.integers(0, 2, (3, 4)).astype(bool))

    def body(x, n, flag):  # three inputs of three types, result i1
        return xo.and_(flag, xo.compare(x, xo.convert(n, "f32"), "GT"))

    got = xo.map([f, i, p], [0, 1], body)
    assert_tensor(got, R.map_reference([f, i, p], [0, 1], body).numpy(), "i1")
    to_f64 = xo.map(i, [0, 1], lambda n: xo.convert(n, "f64"))
    assert_tensor(to_f64, i.numpy().astype(np.float64), "f64")
    assert_tensor(xo.map(xo.tensor(2.5), [], xo.negate), -2.5, "f32")
    assert_tensor(
        xo.map(xo.tensor(np.zeros((0, 3), np.float32)), [0, 1], xo.exponential),
        np.zeros((0, 3), np.float32),
    )


def test_map_constraints():
    a = xo.tensor(np.zeros((2, 3), np.float32))
    with raises_spec("map", "C1"):
        xo.map([a, xo.tensor(np.zeros((3, 2), np.float32))], [0, 1], xo.add)
    with raises_spec("map", "C2"):
        xo.map([], [], xo.add)
    with raises_spec("map", "C3"):
        xo.map(a, [1, 0], xo.negate)
    with raises_spec("map", "C3"):
        xo.map(a, [0], xo.negate)
    with raises_spec("map", "C4"):
        xo.map([a, a], [0, 1], lambda x, y: (x, y))
    with raises_spec("map", "C4"):
        xo.map(a, [0, 1], lambda x: xo.reshape(x, [6]))
    with raises_spec("map", "I2"):
        xo.map(a, "01", xo.negate)


# ---------------------------------------------------------------------------------------
# the lane schedules (issue 15): accuracy, NaN and signed zeros, thread-count independence
# ---------------------------------------------------------------------------------------


def _fsum_rows(v, axis):
    """math.fsum (exactly rounded) of each line of v along ``axis``."""
    import math

    return np.apply_along_axis(lambda line: math.fsum(line.astype(np.float64)), axis, v)


@pytest.mark.parametrize(
    "shape,dim",
    [
        ((7, 255), 1),  # short rows: one accumulator
        ((7, 256), 1),  # two whole steps of the 32-lane fold
        ((5, 1000), 1),  # steps and a tail
        ((2, 70001), 1),  # rows folded in chunks, then the chunks
        ((1000, 5), 0),  # columns
        ((3, 300, 40), 1),  # columns of a middle dim
    ],
    ids=str,
)
def test_float_sums_close_to_fsum(shape, dim, serial_kernels):
    rng = np.random.default_rng(11)
    v = (rng.standard_normal(shape) * 100).astype(np.float32)
    want = _fsum_rows(v, dim)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.0, [dim], xo.add)).astype(np.float64)
    # error bound of any summation order: n * eps * sum|x|
    bound = shape[dim] * 2.0**-24 * np.abs(v).astype(np.float64).sum(axis=dim)
    assert np.all(np.abs(got - want) <= bound), np.abs(got - want).max()
    v64 = v.astype(np.float64)
    got64 = np.asarray(xo.reduce(xo.tensor(v64), 0.0, [dim], xo.add))
    np.testing.assert_allclose(got64, _fsum_rows(v64, dim), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("n", [300, 1000])
def test_lane_fold_nan_and_signed_zero(n, serial_kernels):
    """Rows long enough for the 32-lane fold: NaN anywhere wins, and a zero result has
    the sign IEEE maximum/minimum give whatever lane held which zero."""
    v = np.full((6, n), -0.0, np.float32)
    v[0, n - 1] = 0.0  # the one +0 in the tail
    v[1, 37] = 0.0  # in a lane
    v[2] = -1.0
    v[2, 5] = np.nan
    v[3, n - 1] = np.nan
    v[4] = np.where(np.arange(n) % 2, 0.0, -0.0)
    x = xo.tensor(v)
    assert_tensor(
        xo.reduce(x, float("-inf"), [1], xo.maximum), [0.0, 0.0, np.nan, np.nan, 0.0, -0.0]
    )
    assert_tensor(
        xo.reduce(x, float("inf"), [1], xo.minimum), [-0.0, -0.0, np.nan, np.nan, -0.0, -0.0]
    )
    w = -v  # minimum's mirror image
    assert_tensor(
        xo.reduce(xo.tensor(w), float("inf"), [1], xo.minimum),
        [-0.0, -0.0, np.nan, np.nan, -0.0, 0.0],
    )
    # columns: the same rows as columns, and the init value taking part
    assert_tensor(
        xo.reduce(xo.tensor(np.ascontiguousarray(v.T)), float("-inf"), [0], xo.maximum),
        [0.0, 0.0, np.nan, np.nan, 0.0, -0.0],
    )
    assert_tensor(xo.reduce(xo.tensor(v[5:]), 0.0, [1], xo.maximum), [0.0])
    assert_tensor(xo.reduce(xo.tensor(np.ascontiguousarray(v[5:].T)), 0.0, [0], xo.maximum), [0.0])


_DETERMINISM = """
import sys, numpy as np, xops as xo
rng = np.random.default_rng(7)
out = []
for shape, dims in [((64, 4099), [1]), ((3, 100003), [1]), ((4099, 64), [0]), ((200001,), [0])]:
    v = rng.standard_normal(shape).astype(np.float32)
    for body, init in ((xo.add, 0.0), (xo.maximum, float("-inf")), (xo.multiply, 1.0)):
        w = v if body is not xo.multiply else (1 + v / 1000).astype(np.float32)
        out.append(np.asarray(xo.reduce(xo.tensor(w), init, dims, body)).view(np.uint32))
np.save(sys.argv[1], np.concatenate([o.ravel() for o in out]))
"""


def test_results_do_not_depend_on_thread_count(tmp_path):
    import os
    import subprocess
    import sys

    results = []
    for threads in ("1", "2"):
        path = tmp_path / f"t{threads}.npy"
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, XOPS_PARALLEL_THRESHOLD="0")
        subprocess.run([sys.executable, "-c", _DETERMINISM, str(path)], env=env, check=True)
        results.append(np.load(path))
    np.testing.assert_array_equal(results[0], results[1])


# ---------------------------------------------------------------------------------------
# bodies that call helper functions are recognised as the op they call
# ---------------------------------------------------------------------------------------


def my_add(a, b):
    return xo.add(a, b)


def my_max(x, y):
    return xo.maximum(x, y)


def via_helper(a, b):
    return my_add(a, b)


def my_ge(a, b):
    return xo.compare(a, b, "GE")


def my_compare(a, b, direction):
    return xo.compare(a, b, comparison_direction=direction)


def test_helper_bodies_are_recognised():
    from xops.ops._bodies import compare_call

    assert binary_op_name(lambda a, b: my_add(a, b)) == "add"
    assert binary_op_name(my_add) == "add"
    assert binary_op_name(lambda a, b: via_helper(a, b)) == "add"  # two helpers deep
    assert binary_op_name(lambda p, q: my_max(p, q)) == "maximum"
    assert comparison_direction(lambda a, b: my_ge(a, b)) == "GE"
    assert comparison_direction(lambda a, b: my_compare(a, b, "LT")) == "LT"
    assert compare_call(lambda a, b, c, d: my_ge(a, b), 4) == ("GE", None)
    for not_it in (
        lambda a, b: my_add(b, a),  # swapped through the helper
        lambda a, b: my_add(a, a),
        lambda a, b: my_ge(a, b),  # a comparison is not a binary op
        lambda a, b: generic_add(a, b),  # the helper is not one call
        lambda a, b: my_add(a, b=b),  # keywords into a helper: not followed
    ):
        assert binary_op_name(not_it) is None
    assert compare_call(lambda a, b, c, d: my_ge(a, c), 4) is None
    assert comparison_direction(lambda a, b: my_compare(a, b, "TOTALORDER")) is None


def test_recognition_notices_rebound_helpers(monkeypatch):
    body = lambda a, b: my_add(a, b)  # noqa: E731
    assert binary_op_name(body) == "add"
    monkeypatch.setitem(globals(), "my_add", lambda a, b: xo.multiply(a, b))
    assert binary_op_name(body) == "multiply"  # not the remembered answer
    monkeypatch.setitem(globals(), "my_add", generic_add)
    assert binary_op_name(body) is None


@pytest.mark.parametrize("dims", [[0], [1], [0, 1]])
def test_helper_bodies_equal_builtins(dims):
    v = np.random.default_rng(12).standard_normal((40, 300)).astype(np.float32)
    x = xo.tensor(v)
    for builtin, helper, init in (
        (xo.add, lambda a, b: my_add(a, b), 0.0),
        (xo.maximum, lambda a, b: my_max(a, b), float("-inf")),
        (xo.add, lambda a, b: via_helper(a, b), 1.5),
    ):
        want = np.asarray(xo.reduce(x, init, dims, builtin))
        np.testing.assert_array_equal(np.asarray(xo.reduce(x, init, dims, helper)), want)


@pytest.mark.parametrize("shape,dims", [((5, 37), [1]), ((37, 5), [0]), ((3, 4, 9), [1, 2])])
def test_generic_path_is_the_recorded_tree(shape, dims):
    """The generic path (either layout) computes the very tree the gradient rule
    re-runs on the tape: a rounding-sensitive body gives the same bits."""

    def logaddexp(a, b):
        hi = xo.maximum(a, b)
        return xo.add(hi, xo.log_plus_one(xo.exponential(xo.negate(xo.abs(xo.subtract(a, b))))))

    v = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
    x = xo.tensor(v)
    init = xo.tensor(np.float32(-np.inf))
    got = xo.reduce(x, init, dims, logaddexp)
    (tree,) = R._reduce_tree([x], [init], dims, logaddexp, [x.dtype])
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(tree).view(np.uint32))
    want = np.logaddexp.reduce(v.astype(np.float64), axis=tuple(dims))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# the in-order tree fold of float sums and products (issue 15)
# ---------------------------------------------------------------------------------------


def _tree_reference(row, op):
    """The float add/multiply row schedule, written with NumPy: passes turn the values
    left of the last m % 64 into balanced trees of 8 neighbours ((s0 s1)(s2 s3))((s4 s5)
    (s6 s7)), each pass's tail folded left to right; fewer than 64 values fold left to
    right, then combine with the tails, the latest pass's first."""

    def left(vs):
        v = vs[0]
        for w in vs[1:]:
            v = op(v, w)
        return v

    if len(row) < 64:
        return left(row)
    tails = []
    while len(row) >= 64:
        q = len(row) // 64
        g = row[: 64 * q].reshape(-1, 8)
        g = op(g[:, 0::2], g[:, 1::2])
        g = op(g[:, 0::2], g[:, 1::2])
        if len(row) > 64 * q:
            tails.append(left(row[64 * q :]))
        row = op(g[:, 0], g[:, 1])
    v = left(row)
    for t in reversed(tails):
        v = op(v, t)
    return v


@pytest.mark.parametrize("n", [63, 64, 65, 520, 4096, 4159, 33000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_row_fold_is_the_documented_tree(n, dtype, serial_kernels):
    """Bit for bit the tree of xops.kernels.reduction._fold_tree (an in-order tree, so a
    schedule the spec allows), rows longer than the chunk (33000: chunks, then the
    chunk results) included; values of mixed magnitudes make every rounding count."""
    rng = np.random.default_rng(21)
    v = (rng.standard_normal((3, n)) * 10.0 ** rng.integers(-4, 5, (3, n))).astype(dtype)
    p = (1 + rng.standard_normal((2, n)) * 1e-2).astype(dtype)
    chunk = R._ROW_CHUNK
    for vals, body, op, init in ((v, xo.add, np.add, 0.5), (p, xo.multiply, np.multiply, 2.0)):
        got = np.asarray(xo.reduce(xo.tensor(vals), init, [1], body))
        want = []
        for row in vals:
            parts = [_tree_reference(row[i : i + chunk], op) for i in range(0, n, chunk)]
            tree = parts[0] if len(parts) == 1 else _tree_reference(np.array(parts), op)
            want.append(op(dtype(init), tree))
        np.testing.assert_array_equal(got.view(np.uint8), np.array(want, dtype).view(np.uint8))


@pytest.mark.parametrize(
    "shape,dims,body,kernel",
    [
        ((32, 10), [0], xo.add, "FOLD_LEFT"),  # columns
        ((32,), [0], xo.add, "FOLD_LEFT"),  # rows shorter than the tree needs
        ((3, 63), [1], xo.multiply, "FOLD_LEFT"),
        ((3, 64), [1], xo.add, "FOLD_ROWS"),  # rows of one tree block
        ((3, 255), [1], xo.maximum, "FOLD_LEFT"),  # shorter than the lanes need
        ((3, 256), [1], xo.minimum, "FOLD_ROWS"),
    ],
    ids=str,
)
def test_left_folds_compile_apart(shape, dims, body, kernel, monkeypatch, serial_kernels):
    """Columns, and rows whose chunks are all too short for the tree or lane folds, run
    xops.kernels.reduction.fold_left (the small reductions of the main job compile no
    tree or lane loop); longer rows run fold_rows. Short rows fold left to right, then
    combine(init, fold), bit for bit."""
    seen = []
    for name in ("FOLD_LEFT", "FOLD_ROWS"):
        spies = {}
        for code, k in getattr(KR, name).items():

            def spy(*args, k=k, name=name):
                seen.append(name)
                return k(*args)

            spies[code] = spy
        monkeypatch.setattr(KR, name, spies)
    rng = np.random.default_rng(5)
    v = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
    if body is xo.multiply:
        v = (1 + v * 1e-3).astype(np.float32)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.75, dims, body))
    assert seen == [kernel]
    if kernel == "FOLD_LEFT" and len(shape) == 2 and dims == [1]:
        op = {xo.multiply: np.multiply, xo.maximum: np.maximum}[body]
        want = []
        for row in v:
            acc = row[0]
            for e in row[1:]:
                acc = op(acc, e)
            want.append(op(np.float32(0.75), acc))
        np.testing.assert_array_equal(got.view(np.uint8), np.array(want).view(np.uint8))


def test_row_kernel_short_chunks_match_left_folds():
    """fold_rows folds a chunk too short for its tree or lanes (a row's last chunk) as
    fold_left folds short rows: the same bits for every op."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((5, 40, 1)) * 10.0 ** rng.integers(-3, 4, (5, 40, 1))).astype(
        np.float32
    )
    x[1, 7, 0] = np.nan
    x[2] = -0.0
    for code in (KR.ADD, KR.MUL, KR.MAX, KR.MIN):
        outs = []
        for table in (KR.FOLD_LEFT, KR.FOLD_ROWS):
            out = np.empty((5, 3), np.float32)
            table[code].serial(x, out, np.float32(0.5), True, 16)  # chunks 16, 16, 8
            outs.append(out)
        np.testing.assert_array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8))


# ---------------------------------------------------------------------------------------
# compiled bodies (issue 15): the generic tree with the body run as a program
# ---------------------------------------------------------------------------------------


def _logaddexp(a, b):
    hi = xo.maximum(a, b)
    return xo.add(hi, xo.log_plus_one(xo.exponential(xo.negate(xo.abs(xo.subtract(a, b))))))


def _spy_program_fold(monkeypatch):
    runs = []
    real = R._program_fold

    def spy(*args):
        runs.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(R, "_program_fold", spy)
    return runs


HALF = 0.5


@pytest.mark.parametrize(
    "body",
    [
        _logaddexp,
        lambda a, b: xo.sqrt(xo.add(xo.multiply(a, a), xo.multiply(b, b))),  # hypot
        lambda a, b: xo.divide(xo.add(a, b), 2.0),  # a Python constant
        lambda a, b: xo.minimum(xo.multiply(a, HALF), xo.subtract(b, 1)),  # a global
        lambda a, b: a + b * 0.5,  # operators
    ],
    ids=["logaddexp", "hypot", "mean2", "global", "operators"],
)
@pytest.mark.parametrize(
    "shape,dims,dtype",
    [((64, 100), [1], np.float32), ((100, 64), [0], np.float32), ((3, 40, 50), [0, 2], "f64")],
)
def test_compiled_body_is_the_generic_tree(monkeypatch, body, shape, dims, dtype):
    """A body of elementwise float ops runs compiled, with exactly the generic path's
    results (and those of the tree the gradient rule records). Where the compiled body
    does not match the generic path on the probe rows on this CPU (f64 logaddexp on an
    AVX-512 machine: NumPy's SIMD exp/log1p loops there round differently from libm),
    the body stays on the generic path: the values are checked the same way."""
    rng = np.random.default_rng(22)
    x = xo.tensor(rng.standard_normal(shape).astype(np.float32), dtype)
    init = xo.tensor(np.float32(-1.25), dtype)
    monkeypatch.setattr(R, "_VERIFIED", {})
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(x, init, dims, body))
    kept = [d for d in range(len(shape)) if d not in dims]
    full = (int(np.prod([shape[d] for d in kept])), int(np.prod([shape[d] for d in dims])))
    (verified,) = R._VERIFIED.values()  # (this body's program, checked once on this CPU)
    if verified:
        assert runs[-1] == full
    else:
        assert full not in runs and dtype == "f64" and body is _logaddexp
    (gen,) = R._reduce_generic([x], [init], dims, body, [x.dtype])
    (tree,) = R._reduce_tree([x], [init], dims, body, [x.dtype])
    for want in (gen, tree):
        np.testing.assert_array_equal(got.view(np.uint8), np.asarray(want).view(np.uint8))


def test_compiled_logaddexp_is_accurate(monkeypatch):
    v = np.random.default_rng(23).standard_normal((40, 1000)).astype(np.float32) * 30
    runs = _spy_program_fold(monkeypatch)
    got = xo.reduce(xo.tensor(v), float("-inf"), [1], _logaddexp)
    assert runs[-1] == (40, 1000)
    want = np.logaddexp.reduce(v.astype(np.float64), axis=1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6)


@pytest.mark.parametrize(
    "body",
    [
        lambda a, b: xo.select(xo.compare(a, b, "GT"), a, b),  # select: not a program op
        lambda a, b: xo.add(a, xo.convert(xo.compare(a, b, "GT"), "f32")),  # unrecorded
        lambda a, b: xo.add(xo.tanh(a), b),  # tanh: not a program op
    ],
    ids=["select", "unrecorded", "tanh"],
)
def test_bodies_that_are_not_programs_stay_generic(monkeypatch, body):
    x = xo.tensor(np.random.default_rng(24).standard_normal((64, 80)).astype(np.float32))
    runs = _spy_program_fold(monkeypatch)
    got = np.asarray(xo.reduce(x, 0.0, [1], body))
    assert not runs
    (want,) = R._reduce_generic([x], [xo.tensor(np.float32(0))], [1], body, [x.dtype])
    np.testing.assert_array_equal(got, np.asarray(want))


def test_a_program_that_disagrees_with_the_ops_stays_generic(monkeypatch):
    """The probe: a program whose op differs from the body's own (here exponential
    compiled as log1p, as a CPU-specific NumPy loop could differ) is never used."""
    from xops.kernels import reduction as KR

    ops = dict(KR.PROGRAM_OPS, exponential=KR.PROGRAM_OPS["log_plus_one"])
    monkeypatch.setattr(KR, "PROGRAM_OPS", ops)
    monkeypatch.setattr(R, "_VERIFIED", {})
    x = xo.tensor(np.random.default_rng(25).standard_normal((64, 80)).astype(np.float32))
    got = np.asarray(xo.reduce(x, float("-inf"), [1], _logaddexp))
    assert list(R._VERIFIED.values()) == [False]
    init = xo.tensor(np.float32(-np.inf))
    (want,) = R._reduce_generic([x], [init], [1], _logaddexp, [x.dtype])
    np.testing.assert_array_equal(got.view(np.uint32), np.asarray(want).view(np.uint32))


def test_compiled_body_parallel_equals_serial(monkeypatch):
    x = xo.tensor(np.random.default_rng(26).standard_normal((70, 301)).astype(np.float32))
    serial = np.asarray(xo.reduce(x, 0.0, [1], _logaddexp))
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = np.asarray(xo.reduce(x, 0.0, [1], _logaddexp))
    np.testing.assert_array_equal(serial.view(np.uint32), parallel.view(np.uint32))


# ---------------------------------------------------------------------------------------
# row groups (issue 15): each parallel iteration folds a group of rows, one by one
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rows,n", [(9, 4096), (7, 200), (13, 33000), (5, 65536)])
def test_row_groups_are_each_rows_tree(rows, n, serial_kernels):
    """Rows folded in groups (whole rows, or chunks of rows longer than the chunk:
    65536 = 2 chunks per row) give each row's documented tree, bit for bit, for sums;
    max keeps NaN and the signed zeros exact."""
    rng = np.random.default_rng(5)
    v = (rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-4, 5, (rows, n))).astype(np.float32)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.5, [1], xo.add))
    chunk = R._ROW_CHUNK
    want = []
    for row in v:
        parts = [_tree_reference(row[i : i + chunk], np.add) for i in range(0, n, chunk)]
        tree = parts[0] if len(parts) == 1 else _tree_reference(np.array(parts), np.add)
        want.append(np.add(np.float32(0.5), tree))
    np.testing.assert_array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))
    w = np.zeros((rows, n), np.float32)
    w[0] = -0.0
    w[1, n // 2] = np.nan
    w[2] = -np.abs(v[2])
    w[3, ::3] = -0.0
    for body, init, ref in ((xo.maximum, -np.inf, np.max), (xo.minimum, np.inf, np.min)):
        got = np.asarray(xo.reduce(xo.tensor(w), init, [1], body))
        want = ref(w, axis=1)
        assert np.isnan(got[1]) and np.isnan(want[1])
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(got[keep], want[keep])
        # IEEE maximum: -0 < +0 (row 0 all -0 gives -0; row 3 mixes both: +0 wins)
        zeros = np.signbit(got[[0, 3]])
        assert list(zeros) == ([True, False] if body is xo.maximum else [True, True])


@pytest.mark.parametrize("rows,n", [(531, 64), (531, 200), (603, 520), (70, 4096)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_rows_in_groups(rows, n, dtype, serial_kernels):
    """Rows fold as the tree (xops.kernels.reduction._fold_tree) in groups of up to
    _GROUP rows, the last one shorter (531 rows: groups of 16, the last of 3; 70 rows:
    groups of 8, the last of 6), rows of one to many first-pass blocks, tails included:
    each row's documented tree, bit for bit, for sums and products."""
    group = max(1, min(KR._GROUP, rows // 8))
    assert rows % group != 0
    rng = np.random.default_rng(22)
    v = (rng.standard_normal((rows, n)) * 10.0 ** rng.integers(-4, 5, (rows, n))).astype(dtype)
    p = (1 + rng.standard_normal((rows, n)) * 1e-2).astype(dtype)
    for vals, body, op, init in ((v, xo.add, np.add, 0.5), (p, xo.multiply, np.multiply, 2.0)):
        got = np.asarray(xo.reduce(xo.tensor(vals), init, [1], body))
        want = np.array([op(dtype(init), _tree_reference(row, op)) for row in vals], dtype)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_lane_rows_from_memory(serial_kernels):
    """Rows of 2 chunks on the lane fold, an input larger than the caches: maximum /
    minimum exact, NaN and signed zeros included."""
    rows, n = 36, 65536
    rng = np.random.default_rng(7)
    w = rng.standard_normal((rows, n)).astype(np.float32)
    w[0] = -0.0
    w[1, n - 5] = np.nan
    w[2] = -np.abs(w[2])
    w[3] = 0.0
    w[3, 40000] = -0.0
    for body, init, ref in ((xo.maximum, -np.inf, np.max), (xo.minimum, np.inf, np.min)):
        got = np.asarray(xo.reduce(xo.tensor(w), init, [1], body))
        want = ref(w, axis=1)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(got[keep], want[keep])
        assert list(np.signbit(got[[0, 3]])) == (
            [True, False] if body is xo.maximum else [True, True]
        )


def test_integer_row_groups(serial_kernels):
    """Integer sums and products fold rows as the tree too (wrapping: exact in any
    order): the wrapped NumPy results."""
    rng = np.random.default_rng(6)
    v = rng.integers(-(2**62), 2**62, (9, 777), dtype=np.int64)
    np.testing.assert_array_equal(np.asarray(xo.reduce(xo.tensor(v), 3, [1], xo.add)), v.sum(1) + 3)
    u = rng.integers(0, 2**32, (6, 300), dtype=np.uint32)
    np.testing.assert_array_equal(
        np.asarray(xo.reduce(xo.tensor(u), np.uint32(2), [1], xo.multiply)),
        (u.prod(1, dtype=np.uint32) * np.uint32(2)).astype(np.uint32),
    )


# ---------------------------------------------------------------------------------------
# reduce's validated-signature cache (issue 15): repeated calls skip the checks
# ---------------------------------------------------------------------------------------


def test_signature_cache_follows_shape_dtype_body_and_dims():
    """After a cached call, a changed shape, element type, body, init kind or dimension
    is checked and computed anew (every result against NumPy)."""
    x = xo.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    for _ in range(2):  # the second call is a cache hit
        assert_tensor(xo.reduce(x, 0.0, [1], xo.add), np.array([3.0, 12.0], np.float32))
    assert_tensor(xo.reduce(x, 0.0, [0], xo.add), np.array([3.0, 5.0, 7.0], np.float32))
    assert_tensor(xo.reduce(x, 2.0, [1], xo.multiply), np.array([0.0, 120.0], np.float32))
    assert_tensor(xo.reduce(x, -np.inf, [1], xo.maximum), np.array([2.0, 5.0], np.float32))
    assert_tensor(xo.reduce(x, 0.0, (0, 1), lambda a, b: xo.add(a, b)), np.array(15.0, np.float32))
    y = xo.tensor(np.arange(8.0, dtype=np.float32).reshape(2, 2, 2))
    assert_tensor(xo.reduce(y, 0.0, [1], xo.add), np.array([[2, 4], [10, 12]], np.float32))
    i = xo.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert_tensor(xo.reduce(i, 0, [1], xo.add), np.array([3, 12], np.int32))
    assert_tensor(xo.reduce(i, xo.tensor(np.int32(1)), [1], xo.add), np.array([4, 13], np.int32))
    # a non-contiguous input with a cached shape and the init value of a cached call
    t = xo.transpose(xo.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2)), [1, 0])
    assert_tensor(xo.reduce(t, 0.0, [1], xo.add), np.array([6.0, 9.0], np.float32))
    assert_tensor(xo.reduce(x, 0.5, [1], xo.add), np.array([3.5, 12.5], np.float32))


def test_signature_cache_keeps_every_error():
    """Bad calls raise the same SpecError before and after a good call of the same
    shape is cached: dims out of range or repeated, bool/float dims, init values of
    another type or shape, a body that is no kernel's."""
    x = xo.tensor(np.ones((2, 3), np.float32))
    for _ in range(2):
        xo.reduce(x, 0.0, [1], xo.add)
        with raises_spec("reduce", "C4"):
            xo.reduce(x, 0.0, [2], xo.add)
        with raises_spec("reduce", "C5"):
            xo.reduce(x, 0.0, [1, 1], xo.add)
        with raises_spec("reduce", "I3"):
            xo.reduce(x, 0.0, [True], xo.add)
        with raises_spec("reduce", "I3"):
            xo.reduce(x, 0.0, [1.0], xo.add)
        with raises_spec("reduce", "C2"):
            xo.reduce(x, xo.tensor(np.float64(0)), [1], xo.add)
        with raises_spec("reduce", "I2"):
            xo.reduce(x, xo.tensor(np.zeros(1, np.float32)), [1], xo.add)
        with raises_spec("and", "I1"):  # and of floats: the body's own error
            xo.reduce(x, 0.0, [1], xo.and_)


def test_signature_cache_keeps_gradients_and_rebinding():
    """A tensor requiring a gradient takes the recorded path after cached calls; a
    helper body whose global is rebound is recognised anew."""
    global my_add
    v = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    xo.reduce(xo.tensor(v), 0.0, [1], xo.add)
    x = xo.tensor(v, requires_grad=True)
    g = xo.grad(lambda t: xo.reduce(xo.reduce(t, 0.0, [1], xo.add), 0.0, [0], xo.add))(x)
    np.testing.assert_array_equal(np.asarray(g), np.ones((2, 3), np.float32))
    body = lambda a, b: my_add(a, b)  # noqa: E731
    assert_tensor(xo.reduce(xo.tensor(v), 0.0, [1], body), np.array([3.0, 12.0], np.float32))
    saved = my_add
    try:
        my_add = xo.multiply
        assert_tensor(xo.reduce(xo.tensor(v), 1.0, [1], body), np.array([0.0, 60.0], np.float32))
    finally:
        my_add = saved


@pytest.mark.parametrize(
    "shape,dims",
    [((5, 3, 8, 8), [0, 2, 3]), ((4, 3, 9, 9), [0, 2, 3]), ((2, 3, 1, 4, 8, 9), [0, 4, 5])],
    ids=str,
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outer_and_inner_blocks_fold_in_place(shape, dims, dtype, serial_kernels):
    """Reduced dims around a kept block (a per-channel sum of NCHW over N, H, W) fold in
    place: each inner row as the row tree, then the rows of each kept index left to
    right from the init value (a tree the spec allows), bit for bit; max/min exact on
    NaN and signed zeros; integers exact."""
    assert R._fold_plan(shape, tuple(dims))[6] is not None
    rng = np.random.default_rng(22)
    v = (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, shape)).astype(dtype)
    kept = [d for d in range(len(shape)) if d not in dims]
    a, c = shape[dims[0]], int(np.prod([shape[d] for d in kept]))
    rows = v.reshape(a, c, -1)  # (the dims are in that order: outer, kept, inner)
    got = np.asarray(xo.reduce(xo.tensor(v), 0.5, dims, xo.add)).reshape(-1)
    want = []
    for k in range(c):
        acc = dtype(0.5)
        for n in range(a):
            acc = np.add(acc, _tree_reference(rows[n, k], np.add))
        want.append(acc)
    np.testing.assert_array_equal(got.view(np.uint8), np.array(want, dtype).view(np.uint8))
    s = v.copy()
    s[(0,) * len(shape)] = np.nan
    s.reshape(a, c, -1)[1, 1, :] = 0.0
    s.reshape(a, c, -1)[0, 1, :] = -0.0
    for body, init, ref in ((xo.maximum, -np.inf, np.max), (xo.minimum, np.inf, np.min)):
        out = np.asarray(xo.reduce(xo.tensor(s), init, dims, body)).reshape(-1)
        np.testing.assert_array_equal(out, ref(s, axis=tuple(dims)).reshape(-1))
    zeros = np.zeros(shape, dtype)
    zeros.reshape(a, c, -1)[a - 1] = -0.0
    top = np.asarray(xo.reduce(xo.tensor(zeros), -np.inf, dims, xo.maximum))
    low = np.asarray(xo.reduce(xo.tensor(zeros), np.inf, dims, xo.minimum))
    assert not np.signbit(top).any() and np.signbit(low).all()
    i = rng.integers(-(2**62), 2**62, shape)
    with np.errstate(over="ignore"):
        assert_tensor(xo.reduce(xo.tensor(i), 0, dims, xo.add), i.sum(axis=tuple(dims)), "i64")


def test_outer_and_inner_blocks_parallel_equals_serial(monkeypatch):
    x = xo.tensor(np.random.default_rng(23).standard_normal((64, 16, 28, 28)).astype(np.float32))
    serial = np.asarray(xo.reduce(x, 0.0, [0, 2, 3], xo.add))
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = np.asarray(xo.reduce(x, 0.0, [0, 2, 3], xo.add))
    np.testing.assert_array_equal(parallel.view(np.uint32), serial.view(np.uint32))
    want = np.asarray(x).astype(np.float64).sum(axis=(0, 2, 3))
    np.testing.assert_allclose(serial, want, rtol=1e-5)


def test_short_inner_blocks_gather_the_reduced_dims_first():
    assert R._fold_plan((5, 3, 4, 4), (0, 2, 3))[6] is None  # (16 < _SPLIT_ROW)
    v = np.random.default_rng(24).integers(-8, 9, (5, 3, 4, 4)).astype(np.float32)
    assert_tensor(xo.reduce(xo.tensor(v), 0.0, [0, 2, 3], xo.add), v.sum(axis=(0, 2, 3)))
