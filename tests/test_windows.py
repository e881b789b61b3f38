"""reduce_window and select_and_scatter: the spec examples, the kernels and the generic
(vectorised) paths against the naive references over an attribute zoo, parallel ==
serial bit for bit, jax/torch cross-checks, and one negative test per constraint label.

Kernel specialisations are kept few (CI compiles them cold): reduce_window add/maximum
on f32 and i64; select GE (f32, i64) and LE (i64); scatter add (f32, i64) and
maximum (i64)."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.ops import _window_geometry as G
from xops.ops import windows as R
from conftest import assert_tensor, raises_spec


def generic_add(a, b):  # not recognised: two calls
    return xo.add(xo.multiply(a, 1), b)


def generic_max(a, b):
    return xo.maximum(xo.maximum(a, b), a)


def ge(a, b):
    return xo.compare(a, b, "GE")


def le(a, b):
    return xo.compare(a, b, "LE")


def generic_ge(a, b):  # the same select, not recognised
    return xo.not_(xo.compare(a, b, "LT"))


def argmax_body(av, ai, bv, bi):
    pick_a = xo.or_(
        xo.compare(av, bv, "GT"), xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT"))
    )
    return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)


# ---------------------------------------------------------------------------------------
# reduce_window
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [xo.add, generic_add], ids=["add", "generic"])
def test_reduce_window_spec_examples(body):
    x = xo.tensor([[1, 2], [3, 4], [5, 6]], "i64")
    out = xo.reduce_window(
        x,
        xo.tensor(0, "i64"),
        window_dimensions=[2, 1],
        window_strides=[4, 1],
        base_dilations=[2, 1],
        window_dilations=[3, 1],
        padding=[[2, 1], [0, 0]],
        body=body,
    )
    assert_tensor(out, [[0, 0], [3, 4]], "i64")
    # conformance test reduce_window_issue_1662
    out = xo.reduce_window(x, 0, [3, 1], [4, 1], [2, 1], [3, 1], [[2, 1], [0, 0]], body=body)
    assert_tensor(out, [[5, 6]], "i64")


WINDOW_ZOO = [  # shape, window, strides, base dilations, window dilations, padding
    ((4, 5), [2, 2], None, None, None, None),
    ((5, 6), [2, 3], [2, 1], None, None, None),
    ((5, 6), [3, 2], [1, 2], None, None, [(1, 1), (0, 2)]),
    ((4, 5), [2, 2], [1, 1], [2, 1], None, [(1, 0), (0, 0)]),  # base dilation
    ((6, 7), [2, 3], [1, 2], None, [2, 2], None),  # window dilation
    ((3, 4), [2, 2], [2, 3], [3, 2], [2, 1], [(2, 1), (1, 3)]),  # everything at once
    ((3, 3), [2, 2], None, None, None, [(5, 7), (4, 6)]),  # large padding
    ((6, 6), [2, 2], [2, 2], None, None, [(-1, -2), (1, -1)]),  # negative padding
    ((3, 4), [4, 2], None, None, None, None),  # window > input
    ((0, 4), [1, 2], None, None, None, [(1, 1), (0, 0)]),  # empty input dim
    ((7,), [3], [2], None, None, [(1, 1)]),
    ((2, 3, 4, 5), [1, 2, 1, 2], [1, 1, 2, 2], None, None, None),  # NCHW-like pooling
    ((2, 3, 4, 5, 2), [2, 1, 2, 1, 2], None, None, None, None),  # rank 5 after merging
    ((), [], None, None, None, None),
    ((2, 3, 7, 9), [1, 1, 2, 2], [1, 1, 2, 2], None, None, None),  # tiles (pooling 2x2/2)
    ((2, 5, 7), [1, 3, 2], [1, 3, 2], None, None, None),  # tiles 3x2, leftovers
]


def _zoo_id(case):
    return f"{case[0]}w{case[1]}"


@pytest.mark.parametrize("case", WINDOW_ZOO, ids=_zoo_id)
@pytest.mark.parametrize(
    "body,init,dtype",
    [
        (xo.add, 0, "i64"),
        (xo.maximum, -100, "i64"),
        (generic_add, 0, "i64"),
        (generic_max, -100, "i64"),
        (xo.add, 10, "i64"),
        (xo.maximum, -100, "f32"),
    ],
    ids=["add", "maximum", "generic_add", "generic_max", "add_init10", "maximum_f32"],
)
def test_reduce_window_against_reference(case, body, init, dtype):
    shape, wd, ws, bd, wdl, pad = case
    rng = np.random.default_rng(sum(shape) + len(wd))
    x = xo.tensor(rng.integers(-9, 10, shape), dtype)
    kw = dict(window_strides=ws, base_dilations=bd, window_dilations=wdl, padding=pad)
    got = xo.reduce_window(x, init, wd, body=body, **kw)
    want = R.reduce_window_reference(x, init, wd, body=body, **kw)
    assert_tensor(got, want.numpy(), dtype)


def test_reduce_window_float_add_is_the_reference_order():
    # the window kernel folds exactly as the reference: bit-identical float sums
    rng = np.random.default_rng(8)
    x = xo.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    for case in WINDOW_ZOO[:8]:
        shape, wd, ws, bd, wdl, pad = case
        if len(shape) != 2:
            continue
        kw = dict(window_strides=ws, base_dilations=bd, window_dilations=wdl, padding=pad)
        got = xo.reduce_window(x, 0.5, wd, body=xo.add, **kw)
        want = R.reduce_window_reference(x, 0.5, wd, body=xo.add, **kw)
        np.testing.assert_array_equal(
            np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32)
        )
        gen = xo.reduce_window(x, 0.5, wd, body=generic_add, **kw)
        np.testing.assert_array_equal(
            np.asarray(gen).view(np.uint32), np.asarray(want).view(np.uint32)
        )


def test_non_overlapping_windows_take_the_tile_kernels():
    # windows that tile the last two dims (stride = window, no padding or dilation) run
    # the table-free *_tiles kernels; everything else the general ones
    def tiling(shape, wd, ws, pad=None):
        pad = pad or [(0, 0)] * len(shape)
        out = [
            G._num_windows(n, w, s, 1, 1, lo, hi) for n, w, s, (lo, hi) in zip(shape, wd, ws, pad)
        ]
        tables = [
            G._table(n, w, s, 1, 1, lo, o) for n, w, s, (lo, _), o in zip(shape, wd, ws, pad, out)
        ]
        return G._tiling(G._canonical4(tables, shape, out))

    assert tiling((64, 16, 28, 28), [1, 1, 2, 2], [1, 1, 2, 2]) == [2, 2]
    assert tiling((2, 5, 7), [1, 3, 2], [1, 3, 2]) == [3, 2]
    assert tiling((9,), [3], [3]) == [1, 3]
    assert tiling((4, 6), [2, 2], [1, 1]) is None  # overlapping
    assert tiling((4, 6), [2, 2], [2, 2], [(1, 1), (0, 0)]) is None  # padding
    assert tiling((4, 6), [2, 2], [2, 2], [(0, 1), (0, 0)]) == [2, 2]  # never reached
    assert tiling((2, 4, 6, 3), [1, 2, 2, 1], [1, 2, 2, 1]) is None  # NHWC: windows not last
    # float add folds in the reference's order on the tile path too: bit-identical
    x = xo.tensor(np.random.default_rng(8).standard_normal((3, 7, 9)).astype(np.float32))
    for wd in ([1, 2, 2], [1, 3, 4], [1, 1, 3]):
        got = xo.reduce_window(x, 0.5, wd, wd, body=xo.add)
        want = R.reduce_window_reference(x, 0.5, wd, wd, body=xo.add)
        np.testing.assert_array_equal(
            np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32)
        )


def test_reduce_window_narrow_and_other_types():
    x = xo.tensor([[1.0, 2.0**-9], [2.0**-9, 2.0**-9]], "bf16")
    # fast path: f32 accumulation, one rounding; a bf16 body rounds every step
    assert_tensor(
        xo.reduce_window(x, 0.0, [2, 2], body=xo.add),
        np.array([[1 + 2.0**-8 + 2.0**-9]], np.float32).astype(x.dtype.np),
        "bf16",
    )
    assert_tensor(xo.reduce_window(x, 0.0, [2, 2], body=generic_add), [[1.0]], "bf16")
    b = xo.tensor([[True, False, True], [False, False, True]])
    assert_tensor(xo.reduce_window(b, False, [2, 2], body=xo.or_), [[True, True]], "i1")
    assert_tensor(
        xo.reduce_window(b, False, [1, 2], body=xo.maximum),  # i1 maximum is or
        [[True, True], [False, True]],
        "i1",
    )
    c = xo.tensor(np.array([[1 + 1j, 2], [3, 4 - 1j]], np.complex64))
    assert_tensor(xo.reduce_window(c, 0, [2, 1], body=xo.add), [[4 + 1j, 6 - 1j]], "c64")
    i4 = xo.tensor([[7, 1, -8]], "i4")
    assert_tensor(
        xo.reduce_window(i4, 0, [1, 2], body=xo.add), xo.tensor([[-8, -7]], "i4").numpy(), "i4"
    )


def test_reduce_window_nan_and_signed_zero():
    x = xo.tensor([[-0.0, 0.0, np.nan, 1.0], [-0.0, -0.0, 2.0, 3.0]])
    got = xo.reduce_window(x, float("-inf"), [2, 2], [2, 2], body=xo.maximum)
    assert_tensor(got, [[0.0, np.nan]])
    got = xo.reduce_window(x, float("-inf"), [2, 1], body=xo.maximum)
    assert_tensor(got, [[-0.0, 0.0, np.nan, 3.0]])


def test_reduce_window_variadic_argmax_pooling():
    rng = np.random.default_rng(9)
    v = xo.tensor(rng.integers(0, 3, (5, 6)).astype(np.float32))  # ties
    idx = xo.tensor(np.arange(30).reshape(5, 6))
    kw = dict(window_strides=[2, 2], padding=[(0, 1), (1, 0)])
    got = xo.reduce_window([v, idx], [float("-inf"), -1], [2, 3], body=argmax_body, **kw)
    want = R.reduce_window_reference([v, idx], [float("-inf"), -1], [2, 3], body=argmax_body, **kw)
    assert isinstance(got, tuple) and len(got) == 2
    assert_tensor(got[0], want[0].numpy(), "f32")
    assert_tensor(got[1], want[1].numpy(), "i64")


def test_reduce_window_big_matches_numpy_pooling(monkeypatch):
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 1 << 62)  # parallel: tested below
    rng = np.random.default_rng(10)
    v = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
    got = xo.reduce_window(xo.tensor(v), float("-inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum)
    assert_tensor(got, v.reshape(4, 3, 16, 2, 16, 2).max(axis=(3, 5)))
    vi = rng.integers(-5, 6, (4, 3, 32, 32))
    got = xo.reduce_window(
        xo.tensor(vi),
        0,
        [1, 1, 3, 3],
        [1, 1, 1, 1],
        padding=[(0, 0), (0, 0), (1, 1), (1, 1)],
        body=xo.add,
    )
    p = np.pad(vi, [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = sum(p[:, :, i : i + 32, j : j + 32] for i in range(3) for j in range(3))
    assert_tensor(got, want, "i64")


def test_reduce_window_parallel_equals_serial(monkeypatch):
    v = xo.tensor(np.random.default_rng(11).standard_normal((3, 4, 20, 21)).astype(np.float32))
    kw = dict(window_strides=[1, 1, 2, 1], padding=[(0, 0), (0, 0), (1, 1), (2, 0)])
    serial = xo.reduce_window(v, float("-inf"), [1, 1, 3, 2], body=xo.maximum, **kw)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = xo.reduce_window(v, float("-inf"), [1, 1, 3, 2], body=xo.maximum, **kw)
    np.testing.assert_array_equal(
        np.asarray(parallel).view(np.uint32), np.asarray(serial).view(np.uint32)
    )


def test_reduce_window_against_jax():
    pytest.importorskip("jax")
    from jax import lax

    rng = np.random.default_rng(12)
    v = rng.standard_normal((2, 9, 8)).astype(np.float32)
    cases = [
        ((1, 3, 2), (1, 2, 1), (1, 1, 1), (1, 1, 1), ((0, 0), (1, 1), (0, 1))),
        ((1, 2, 2), (1, 1, 2), (1, 2, 1), (1, 1, 2), ((0, 0), (0, 2), (1, 1))),
    ]
    for wd, ws, bd, wdl, pad in cases:
        for jax_op, xo_op, init in ((lax.max, xo.maximum, -np.inf), (lax.add, xo.add, 0.0)):
            want = lax.reduce_window(v, np.float32(init), jax_op, wd, ws, pad, bd, wdl)
            got = xo.reduce_window(
                xo.tensor(v),
                init,
                list(wd),
                list(ws),
                list(bd),
                list(wdl),
                [list(p) for p in pad],
                body=xo_op,
            )
            assert_tensor(got, np.asarray(want), exact=False, rtol=1e-6, atol=1e-6)


def test_reduce_window_constraints():
    op = "reduce_window"
    x = xo.tensor(np.zeros((4, 5), np.float32))
    good = dict(window_dimensions=[2, 2], body=xo.add)
    xo.reduce_window(x, 0.0, **good)
    with raises_spec(op, "C1"):
        xo.reduce_window(x, [0.0, 0.0], **good)
    with raises_spec(op, "C2"):
        xo.reduce_window(
            [x, xo.tensor(np.zeros((5, 4), np.float32))], [0.0, 0.0], [2, 2], body=argmax_body
        )
    with raises_spec(op, "C3"):
        xo.reduce_window(x, xo.tensor(0, "i32"), **good)
    with raises_spec(op, "C4"):
        xo.reduce_window(x, 0.0, [2], body=xo.add)
    with raises_spec(op, "C5"):
        xo.reduce_window(x, 0.0, [2, 0], body=xo.add)
    with raises_spec(op, "C6"):
        xo.reduce_window(x, 0.0, window_strides=[1], **good)
    with raises_spec(op, "C7"):
        xo.reduce_window(x, 0.0, window_strides=[1, 0], **good)
    with raises_spec(op, "C8"):
        xo.reduce_window(x, 0.0, base_dilations=[1, 1, 1], **good)
    with raises_spec(op, "C9"):
        xo.reduce_window(x, 0.0, base_dilations=[0, 1], **good)
    with raises_spec(op, "C10"):
        xo.reduce_window(x, 0.0, window_dilations=[1], **good)
    with raises_spec(op, "C11"):
        xo.reduce_window(x, 0.0, window_dilations=[1, -1], **good)
    with raises_spec(op, "C12"):
        xo.reduce_window(x, 0.0, padding=[(0, 0)], **good)
    with raises_spec(op, "C12"):
        xo.reduce_window(x, 0.0, padding=[0, 0, 0, 0], **good)
    with raises_spec(op, "C13"):
        xo.reduce_window(x, 0.0, [2, 2], body=lambda a, b: xo.convert(xo.add(a, b), "f16"))
    with raises_spec(op, "C13"):
        xo.reduce_window(x, 0.0, [2, 2], body=lambda a, b: (a, b))
    with raises_spec(op, "I2"):
        xo.reduce_window(x, xo.tensor([0.0]), **good)
    with raises_spec(op, "I3"):
        xo.reduce_window(x, 0.0, [2.5, 2], body=xo.add)
    with raises_spec(op, "I7"):
        xo.reduce_window(x, 0.0, padding=[(0.5, 0), (0, 0)], **good)
    with pytest.raises(TypeError):
        xo.reduce_window(x, 0.0, [2, 2])  # body is a required keyword


# ---------------------------------------------------------------------------------------
# select_and_scatter
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "select,scatter", [(ge, xo.add), (generic_ge, generic_add)], ids=["fast", "generic"]
)
def test_select_and_scatter_spec_example(select, scatter):
    x = xo.tensor([[1, 5], [2, 5], [3, 6], [4, 4]], "i64")
    src = xo.tensor([[5, 6], [7, 8]], "i64")
    out = xo.select_and_scatter(
        x,
        src,
        xo.tensor(0, "i64"),
        window_dimensions=[3, 1],
        window_strides=[2, 1],
        padding=[[0, 1], [0, 0]],
        select=select,
        scatter=scatter,
    )
    assert_tensor(out, [[0, 0], [0, 0], [5, 14], [7, 0]], "i64")


SAS_ZOO = [  # shape, window, strides, padding
    ((4, 6), [2, 2], [2, 2], None),
    ((5, 6), [3, 3], [1, 1], None),  # overlapping windows
    ((5, 6), [3, 2], [2, 1], [(1, 1), (0, 1)]),  # padding
    ((4, 4), [3, 3], [2, 2], [(3, 3), (2, 4)]),  # windows made of padding only
    ((6, 5), [2, 3], [3, 2], [(-1, 0), (1, -1)]),  # negative padding
    ((3, 4), [4, 2], [1, 1], None),  # no windows
    ((9,), [3], [2], [(1, 1)]),
    ((2, 3, 6, 6), [1, 1, 2, 2], [1, 1, 2, 2], None),
    ((2, 3, 4, 5, 2), [2, 1, 2, 1, 2], None, None),  # rank 5 after merging
    ((2, 3, 7, 9), [1, 1, 2, 2], [1, 1, 2, 2], None),  # tiles, rows / cols left over
    ((2, 5, 7), [1, 3, 2], [1, 3, 2], None),  # tiles 3x2
]


@pytest.mark.parametrize("case", SAS_ZOO, ids=lambda c: f"{c[0]}w{c[1]}")
@pytest.mark.parametrize(
    "select,scatter,init",
    [
        (ge, xo.add, 0),
        (le, xo.add, 0),
        (ge, xo.maximum, -100),
        (generic_ge, xo.add, 0),
        (ge, generic_add, 5),
        (lambda a, b: xo.compare(a, b, "GT", "SIGNED"), xo.add, 0),
    ],
    ids=["GE_add", "LE_add", "GE_max", "generic_select", "generic_scatter", "GT_typed"],
)
def test_select_and_scatter_against_reference(case, select, scatter, init):
    shape, wd, ws, pad = case
    rng = np.random.default_rng(sum(shape) + len(wd))
    x = xo.tensor(rng.integers(0, 3, shape), "i64")  # few values: many ties
    nwin = [
        G._num_windows(n, w, s, 1, 1, p[0], p[1])
        for n, w, s, p in zip(shape, wd, ws or [1] * len(shape), pad or [(0, 0)] * len(shape))
    ]
    src = xo.tensor(rng.integers(1, 10, nwin), "i64")
    kw = dict(window_strides=ws, padding=pad, select=select, scatter=scatter)
    got = xo.select_and_scatter(x, src, init, wd, **kw)
    want = R.select_and_scatter_reference(x, src, init, wd, **kw)
    assert_tensor(got, want.numpy(), "i64")


def test_select_and_scatter_ties_pick_the_first():
    x = xo.tensor([[3, 3], [3, 1]], "i64")
    src = xo.tensor([[7]], "i64")
    for select in (ge, generic_ge):
        out = xo.select_and_scatter(x, src, 0, [2, 2], select=select, scatter=xo.add)
        assert_tensor(out, [[7, 0], [0, 0]], "i64")
    gt = xo.select_and_scatter(
        x, src, 0, [2, 2], scatter=xo.add, select=lambda a, b: xo.compare(a, b, "GT", "SIGNED")
    )
    assert_tensor(gt, [[0, 0], [7, 0]], "i64")  # GT: a tie replaces the pick: last max


def test_select_and_scatter_floats_nan_and_types():
    x = xo.tensor([[1.0, np.nan], [2.0, 0.5]])
    src = xo.tensor([[3.0]])
    # GE: a NaN candidate replaces the pick (1 >= NaN is false), then 2.0 replaces NaN
    for select in (ge, generic_ge):
        out = xo.select_and_scatter(x, src, 0.0, [2, 2], select=select, scatter=xo.add)
        assert_tensor(out, [[0.0, 0.0], [3.0, 0.0]])
    xb = xo.tensor([[1.0, 2.0**-9], [2.0**-9, 0.0]], "bf16")
    sb = xo.tensor([[1.0, 2.0**-9], [2.0**-9, 2.0**-9]], "bf16")
    out = xo.select_and_scatter(
        xb, sb, 0.0, [1, 2], [1, 1], [(0, 0), (0, 1)], select=ge, scatter=xo.add
    )
    want = R.select_and_scatter_reference(
        xb, sb, 0.0, [1, 2], [1, 1], [(0, 0), (0, 1)], select=ge, scatter=xo.add
    )
    assert_tensor(out, want.numpy(), "bf16")
    c = xo.tensor(np.array([[1 + 2j, 1 + 3j]], np.complex64))
    out = xo.select_and_scatter(
        c, xo.tensor(np.array([[5j]], np.complex64)), 0, [1, 2], select=ge, scatter=xo.add
    )
    assert_tensor(out, [[0, 5j]], "c64")  # complex GE: lexicographic
    wide = xo.select_and_scatter(  # C10: the scatter body may compute in a wider type
        xo.tensor([[1, 2]], "i8"),
        xo.tensor([[100]], "i8"),
        100,
        [1, 2],
        select=ge,
        scatter=lambda a, b: xo.add(xo.convert(a, "i32"), xo.convert(b, "i32")),
    )
    assert_tensor(wide, [[100, 200]], "i32")


def test_select_and_scatter_parallel_equals_serial(monkeypatch):
    rng = np.random.default_rng(13)
    x = xo.tensor(rng.standard_normal((2, 3, 21, 20)).astype(np.float32))
    src = xo.tensor(rng.standard_normal((2, 3, 10, 18)).astype(np.float32))
    kw = dict(
        window_strides=[1, 1, 2, 1],
        padding=[(0, 0), (0, 0), (0, 1), (0, 0)],
        select=ge,
        scatter=xo.add,
    )
    serial = xo.select_and_scatter(x, src, 0.0, [1, 1, 3, 3], **kw)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = xo.select_and_scatter(x, src, 0.0, [1, 1, 3, 3], **kw)
    np.testing.assert_array_equal(
        np.asarray(parallel).view(np.uint32), np.asarray(serial).view(np.uint32)
    )


def test_tile_kernels_parallel_equal_serial(monkeypatch):
    rng = np.random.default_rng(15)
    v = rng.standard_normal((2, 3, 21, 20)).astype(np.float32)
    v[0, 0, :2, :4] = [[np.nan, 1.0, 0.0, -0.0], [-0.0, 0.0, 0.0, 5.0]]
    x = xo.tensor(v)
    src = xo.tensor(rng.standard_normal((2, 3, 10, 10)).astype(np.float32))
    kw = dict(select=ge, scatter=xo.add)

    def both():
        args = ([1, 1, 2, 2], [1, 1, 2, 2])
        return [
            np.asarray(xo.reduce_window(x, float("-inf"), *args, body=xo.maximum)),
            np.asarray(xo.select_and_scatter(x, src, 0.0, *args, **kw)),
        ]

    serial = both()
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    for s, p in zip(serial, both()):
        np.testing.assert_array_equal(p.view(np.uint32), s.view(np.uint32))
    want = R.select_and_scatter_reference(x, src, 0.0, [1, 1, 2, 2], [1, 1, 2, 2], **kw)
    np.testing.assert_array_equal(serial[1].view(np.uint32), np.asarray(want).view(np.uint32))
    want = R.reduce_window_reference(x, float("-inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum)
    np.testing.assert_array_equal(serial[0].view(np.uint32), np.asarray(want).view(np.uint32))
    # minimum too (the tile loops write IEEE max / min as blends): -0 < +0, NaN wins
    got = xo.reduce_window(x, float("inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.minimum)
    want = R.reduce_window_reference(x, float("inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.minimum)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))
    assert np.isnan(np.asarray(got)[0, 0, 0, 0]) and np.signbit(np.asarray(got)[0, 0, 0, 1])
    assert np.isnan(serial[0][0, 0, 0, 0]) and serial[0][0, 0, 0, 1] == 5.0


def test_tile_kernels_read_transposed_operands_in_memory_order():
    # a convolution's NCHW result is a transposed view (channels outermost in memory);
    # the tile kernels take its planes in that order: same results, no copy
    rng = np.random.default_rng(16)
    v = rng.standard_normal((3, 2, 6, 8)).astype(np.float32)  # (C, N, H, W) in memory
    x = xo.transpose(xo.tensor(v), [1, 0, 2, 3])
    assert not np.asarray(x).flags.c_contiguous
    xc = xo.tensor(np.ascontiguousarray(np.asarray(x)))
    src = xo.tensor(rng.standard_normal((2, 3, 3, 4)).astype(np.float32))
    srcs = [
        src,
        xo.transpose(
            xo.tensor(np.ascontiguousarray(np.transpose(np.asarray(src), (1, 0, 2, 3)))),
            [1, 0, 2, 3],
        ),
    ]
    args = ([1, 1, 2, 2], [1, 1, 2, 2])
    want = np.asarray(xo.reduce_window(xc, float("-inf"), *args, body=xo.maximum))
    got = np.asarray(xo.reduce_window(x, float("-inf"), *args, body=xo.maximum))
    np.testing.assert_array_equal(got, want)
    assert not got.flags.c_contiguous  # the operand's layout
    for sv in srcs:
        want = np.asarray(xo.select_and_scatter(xc, sv, 0.0, *args, select=ge, scatter=xo.add))
        got = np.asarray(xo.select_and_scatter(x, sv, 0.0, *args, select=ge, scatter=xo.add))
        np.testing.assert_array_equal(got, want)


def test_select_and_scatter_is_the_max_pool_gradient():
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    from jax import lax

    rng = np.random.default_rng(14)
    v = rng.permutation(2 * 3 * 8 * 10).reshape(2, 3, 8, 10).astype(np.float32)  # no ties
    g = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)
    got = xo.select_and_scatter(
        xo.tensor(v), xo.tensor(g), 0.0, [1, 1, 3, 3], [1, 1, 2, 2], select=ge, scatter=xo.add
    )

    def pool(a):
        return lax.reduce_window(a, -np.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "VALID")

    _, vjp = jax.vjp(pool, v)
    assert_tensor(got, np.asarray(vjp(g)[0]), exact=False, rtol=1e-6, atol=1e-6)
    tv = torch.tensor(v, requires_grad=True)
    torch.nn.functional.max_pool2d(tv, 3, 2).backward(torch.tensor(g))
    assert_tensor(got, tv.grad.numpy(), exact=False, rtol=1e-6, atol=1e-6)
    # overlapping windows with padding (torch pads with -inf: never picked either)
    gp = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = xo.select_and_scatter(
        xo.tensor(v),
        xo.tensor(gp),
        0.0,
        [1, 1, 3, 3],
        [1, 1, 2, 2],
        [(0, 0), (0, 0), (1, 1), (1, 1)],
        select=ge,
        scatter=xo.add,
    )
    tv.grad = None
    torch.nn.functional.max_pool2d(tv, 3, 2, padding=1).backward(torch.tensor(gp))
    assert_tensor(got, tv.grad.numpy(), exact=False, rtol=1e-6, atol=1e-6)


def test_select_and_scatter_constraints():
    op = "select_and_scatter"
    x = xo.tensor(np.zeros((4, 4), np.float32))
    src = xo.tensor(np.zeros((2, 2), np.float32))
    good = dict(select=ge, scatter=xo.add)
    xo.select_and_scatter(x, src, 0.0, [2, 2], [2, 2], **good)
    with raises_spec(op, "C1"):
        xo.select_and_scatter(x, xo.tensor(np.zeros((2, 2), np.int32)), 0.0, [2, 2], [2, 2], **good)
    with raises_spec(op, "C2"):
        xo.select_and_scatter(x, src, 0.0, [2, 2], [1, 1], **good)
    with raises_spec(op, "C3"):
        xo.select_and_scatter(x, src, xo.tensor(0.0, "f64"), [2, 2], [2, 2], **good)
    with raises_spec(op, "C4"):
        xo.select_and_scatter(x, src, 0.0, [2], [2, 2], **good)
    with raises_spec(op, "C5"):
        xo.select_and_scatter(x, src, 0.0, [2, 0], [2, 2], **good)
    with raises_spec(op, "C6"):
        xo.select_and_scatter(x, src, 0.0, [2, 2], [2], **good)
    with raises_spec(op, "C7"):
        xo.select_and_scatter(x, src, 0.0, [2, 2], [2, 0], **good)
    with raises_spec(op, "C8"):
        xo.select_and_scatter(x, src, 0.0, [2, 2], [2, 2], [(0, 0)], **good)
    with raises_spec(op, "C9"):  # select must return i1
        xo.select_and_scatter(x, src, 0.0, [2, 2], [2, 2], select=xo.add, scatter=xo.add)
    with raises_spec(op, "C10"):  # scatter narrower than the operand
        xo.select_and_scatter(
            x,
            src,
            0.0,
            [2, 2],
            [2, 2],
            select=ge,
            scatter=lambda a, b: xo.convert(xo.add(a, b), "bf16"),
        )
    with raises_spec(op, "I3"):
        xo.select_and_scatter(x, src, xo.tensor([0.0]), [2, 2], [2, 2], **good)
    with pytest.raises(TypeError):
        xo.select_and_scatter(x, src, 0.0, [2, 2], [2, 2])  # select/scatter required


# ---------------------------------------------------------------------------------------
# Kernel paths on awkward floats: ties, NaN, signed zeros (bit for bit vs the references)
# ---------------------------------------------------------------------------------------


def awkward(rng, shape):
    """f32 values drawn from few ties, NaN and both zeros."""
    vals = np.array([-1.0, -0.0, 0.0, 1.0, 2.0, np.nan], np.float32)
    return rng.choice(vals, size=shape)


def assert_bits(got, want):
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))


def test_select_and_scatter_2x2_tiles_pick_each_position():
    # the fused 2x2 loop: GE keeps the first maximum; a NaN pick is replaced by the next
    # element, a NaN candidate replaces the pick (1 >= NaN is false)
    nan = np.nan
    windows = [
        [[1, 1], [1, 1]],  # ties: the first
        [[0, 1], [1, 1]],
        [[0, 0], [1, 1]],
        [[0, 0], [0, 1]],
        [[nan, 1], [0, 0]],  # NaN first: replaced by 1, which then stays
        [[1, nan], [0, 0]],  # NaN candidate picked, then replaced by 0, which stays
        [[1, 0], [0, nan]],  # a NaN last is picked
        [[-0.0, 0.0], [0.0, -0.0]],  # -0 >= +0: the first
    ]
    x = np.concatenate([np.array(w, np.float32) for w in windows], axis=1)[None, None]
    src = xo.tensor(np.arange(1, 9, dtype=np.float32).reshape(1, 1, 1, 8))
    got = xo.select_and_scatter(
        xo.tensor(x), src, 0.0, [1, 1, 2, 2], [1, 1, 2, 2], select=ge, scatter=xo.add
    )
    want = np.zeros((2, 16), np.float32)
    for i, (r, c) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1), (0, 1), (1, 0), (1, 1), (0, 0)]):
        want[r, 2 * i + c] = i + 1
    assert_tensor(got, want[None, None])


@pytest.mark.parametrize("select", [ge, le], ids=["GE", "LE"])
def test_select_and_scatter_tiles_and_overlap_exact(select):
    # 2x2 / 2 (the fused tile loop, rows and columns no window covers), 3x2 / (3, 2)
    # tiles, and overlapping windows with padding (the two-pass kernels): ties, NaN,
    # +-0 everywhere; the scatter starts from 0.5
    rng = np.random.default_rng(21)
    cases = [
        ((2, 3, 6, 8), [1, 1, 2, 2], [1, 1, 2, 2], None),
        ((1, 2, 7, 9), [1, 1, 2, 2], [1, 1, 2, 2], None),
        ((2, 2, 7, 6), [1, 1, 3, 2], [1, 1, 3, 2], None),
        ((2, 3, 9, 8), [1, 1, 3, 3], [1, 1, 2, 2], [(0, 0), (0, 0), (1, 1), (1, 0)]),
        ((2, 2, 6, 7), [2, 1, 3, 3], [1, 1, 1, 2], None),
    ]
    for shape, wd, ws, pad in cases:
        x = xo.tensor(awkward(rng, shape))
        nwin = [
            G._num_windows(n, w, s, 1, 1, p[0], p[1])
            for n, w, s, p in zip(shape, wd, ws, pad or [(0, 0)] * 4)
        ]
        src = xo.tensor(rng.standard_normal(nwin).astype(np.float32))
        kw = dict(select=select, scatter=xo.add)
        got = xo.select_and_scatter(x, src, 0.5, wd, ws, pad, **kw)
        assert_bits(got, R.select_and_scatter_reference(x, src, 0.5, wd, ws, pad, **kw))


@pytest.mark.parametrize(
    "body,init", [(xo.maximum, float("-inf")), (xo.minimum, 0.5)], ids=["max", "min"]
)
def test_reduce_window_general_kernel_nan_and_zeros_exact(body, init):
    # the general kernel's IEEE maximum / minimum are branch-free selects: NaN wins,
    # -0 < +0, padding and dilation holes hold the init value
    rng = np.random.default_rng(22)
    x = xo.tensor(awkward(rng, (2, 3, 9, 8)))
    cases = [
        ([1, 1, 3, 3], [1, 1, 2, 2], None, None, None),
        ([1, 1, 3, 3], [1, 1, 1, 1], None, None, [(0, 0), (0, 0), (1, 1), (1, 1)]),
        ([1, 1, 2, 3], [1, 1, 2, 1], [1, 1, 2, 1], [1, 1, 1, 2], [(0, 0), (0, 0), (1, 0), (2, 1)]),
        ([2, 1, 2, 2], [1, 1, 1, 1], None, None, None),
    ]
    for wd, ws, bd, wdl, pad in cases:
        got = xo.reduce_window(x, init, wd, ws, bd, wdl, pad, body=body)
        assert_bits(got, R.reduce_window_reference(x, init, wd, ws, bd, wdl, pad, body=body))


def test_window_geometry_is_planned_once():
    # the tables and canonical form of a geometry are built once and shared by later
    # calls (a pooling layer's every step); they match a fresh build
    args = ((5, 6), [3, 2], [2, 1], [1, 1], [1, 2], [(1, 1), (0, 1)])
    plan = R._plan("reduce_window", *args)
    assert R._plan("reduce_window", *args) is plan
    fresh = R._Plan("reduce_window", *args)
    assert plan.out == fresh.out == [3, 5]
    for t, f in zip(plan.tables, fresh.tables):
        np.testing.assert_array_equal(t, f)
    x = xo.tensor(np.arange(30, dtype=np.float32).reshape(5, 6))
    for _ in range(2):
        got = xo.reduce_window(x, 0.0, *args[1:], body=xo.add)
        assert_tensor(got, R.reduce_window_reference(x, 0.0, *args[1:], body=xo.add).numpy())


def test_window_checks_remember_signatures():
    # a signature that passed the checks once reuses its parsed attributes (a pooling
    # layer's every step); the operands, init values and bodies are still checked on
    # every call, with the same labelled errors, and other spellings take the checks
    from xops.ops import _window_checks as WC

    x = xo.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
    attrs = ([2, 2], [1, 2], None, None, [(1, 0), (0, 1)])
    want = R.reduce_window_reference(x, 0.0, *attrs, body=xo.add).numpy()
    key = WC._signature("reduce_window", (4, 5), 1, xo.config.max_bytes, attrs)
    WC._CHECKED.pop(key, None)
    for _ in range(2):
        assert_tensor(xo.reduce_window(x, 0.0, *attrs, body=xo.add), want)
        assert key in WC._CHECKED
    xs, inits, window, out_shape = WC.reduce_window_checks(x, 0.0, *attrs, xo.add)
    assert window == [[2, 2], [1, 2], [1, 1], [1, 1], [(1, 0), (0, 1)]] and out_shape == [4, 3]
    window[0].append(7)  # the caller's own lists: the remembered ones are unchanged
    assert WC.reduce_window_checks(x, 0.0, *attrs, xo.add)[2][0] == [2, 2]
    op = "reduce_window"
    with raises_spec(op, "C3"):
        xo.reduce_window(x, xo.tensor(0, "i32"), *attrs, body=xo.add)
    with raises_spec(op, "C1"):
        xo.reduce_window(x, [0.0, 0.0], *attrs, body=xo.add)
    with raises_spec(op, "C13"):
        xo.reduce_window(x, 0.0, *attrs, body=None)
    # the same attributes as NumPy arrays: not keyed, parsed every time, same result
    spelled = [np.array(a) if a is not None else None for a in attrs]
    assert WC._signature(op, (4, 5), 1, spelled) is None
    assert_tensor(xo.reduce_window(x, 0.0, *spelled, body=xo.add), want)
    # the rank comes with the shape: the cached signature does not hide C4 for rank 3
    with raises_spec(op, "C4"):
        xo.reduce_window(xo.tensor(np.zeros((4, 5, 1), np.float32)), 0.0, *attrs, body=xo.add)

    op = "select_and_scatter"
    y = xo.tensor(np.array([[1, 5, 2, 8], [3, 4, 9, 0], [7, 6, 5, 4]], np.float32))
    src = xo.tensor(np.array([[10, 20]], np.float32))
    args = (y, src, 0.0, [2, 2], [2, 2], [(0, 0), (0, 0)])
    for _ in range(2):
        got = xo.select_and_scatter(*args, select=ge, scatter=xo.add)
        want = R.select_and_scatter_reference(*args, select=ge, scatter=xo.add)
        assert_tensor(got, want.numpy())
    assert WC._signature(op, (3, 4), (1, 2), ([2, 2], [2, 2], [(0, 0), (0, 0)])) in WC._CHECKED
    with raises_spec(op, "C1"):
        xo.select_and_scatter(y, xo.tensor([[10, 20]], "i32"), *args[2:], select=ge, scatter=xo.add)
    with raises_spec(op, "C3"):
        xo.select_and_scatter(y, src, xo.tensor(0.0, "f64"), *args[3:], select=ge, scatter=xo.add)
    with raises_spec(op, "C2"):  # the same window, another source shape
        xo.select_and_scatter(y, xo.tensor([[1.0], [2.0]]), *args[2:], select=ge, scatter=xo.add)
    with raises_spec(op, "C9"):
        xo.select_and_scatter(*args, select=lambda a: a, scatter=xo.add)
    with raises_spec(op, "C10"):
        xo.select_and_scatter(*args, select=ge, scatter=None)
