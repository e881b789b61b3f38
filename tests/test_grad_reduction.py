"""Gradient rules of reduce, reduce_window, select_and_scatter and map
(xops/ops/reduction.py): central finite differences in float64, first and second
order; exact tie conventions; jax.vjp cross-checks where JAX has the same rule; a
small CNN-style composite; and the rule that every public op there is a primitive.

Inputs are tie-free (random normals) except in the tie tests. check_grads' second
order is checked on squared outputs, so it is not trivially zero for linear ops."""

import numpy as np
import pytest

import xops as xo
from gradcheck import check_grads
from xops.autodiff.tape import primitive
from xops.ops import reduction, windows

RNG = np.random.default_rng(2024)
INF = np.inf


def rand(*shape):
    return RNG.standard_normal(shape)


def f64(v):
    return xo.tensor(np.asarray(v, np.float64))


def sq(out):
    return xo.multiply(out, out)


def ge(a, b):
    return xo.compare(a, b, "GE")


def vjp_of(f, *args, ct=None):
    """xo.vjp of f at args (NumPy), with cotangent ct (ones by default): NumPy arrays."""
    out, fn = xo.vjp(f, *[f64(a) for a in args])
    ct = np.ones(out.shape) if ct is None else ct
    return [np.asarray(c) for c in fn(f64(ct))]


# ---------------------------------------------------------------------------------------
# Every public op of reduction.py is a primitive with a rule
# ---------------------------------------------------------------------------------------


def test_every_public_op_is_a_primitive_with_a_rule():
    for module in (reduction, windows):  # (reduce_window, select_and_scatter: windows.py)
        for name in module.__all__:
            fn = getattr(module, name)
            assert hasattr(fn, "op_name"), f"xo.{name} is not a @primitive: it would cut the graph"
            assert fn._vjp is not None, f"xo.{name} has no gradient rule"
            assert getattr(xo, name) is fn


def test_reduce_no_longer_cuts_the_graph():
    x = f64([1.0, -2.0, 3.0])
    g = xo.grad(lambda t: xo.reduce(xo.multiply(t, t), 0.0, [0], xo.add))(x)
    np.testing.assert_array_equal(np.asarray(g), [2.0, -4.0, 6.0])


def test_no_grad_path_records_nothing():
    x = xo.tensor(rand(3, 4), requires_grad=True)
    with xo.no_grad():
        outs = [
            xo.reduce(x, 0.0, [1], xo.add),
            xo.reduce_window(x, -INF, [2, 2], body=xo.maximum),
            xo.select_and_scatter(x, f64(rand(2, 3)), 0.0, [2, 2], select=ge, scatter=xo.add),
            xo.map([x, x], [0, 1], xo.multiply),
        ]
    assert all(not o.requires_grad and o._node is None for o in outs)
    y = xo.reduce(x, 0.0, [1], xo.add)
    assert y.requires_grad and y._node.op == "reduce"


# ---------------------------------------------------------------------------------------
# reduce
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [[0], [1, 2], [0, 2], [2, 0, 1], []])
def test_reduce_add(dims):
    check_grads(
        lambda x, i: sq(xo.reduce(x, i, dims, xo.add)), [rand(3, 4, 2), np.array(0.3)], order=2
    )


def test_reduce_add_complex():
    x = rand(3, 4) + 1j * rand(3, 4)
    check_grads(lambda t, i: sq(xo.reduce(t, i, [1], xo.add)), [x, np.array(0.5 - 1j)], order=2)


def test_reduce_add_rule_values():
    # the init value is combined once per output: it gets sum(g)
    gx, gi = vjp_of(
        lambda x, i: xo.reduce(x, i, [0, 2], xo.add),
        rand(2, 3, 4),
        7.0,
        ct=np.array([1.0, 2.0, 3.0]),
    )
    np.testing.assert_array_equal(
        gx, np.broadcast_to(np.array([1.0, 2.0, 3.0])[None, :, None], (2, 3, 4))
    )
    assert gi == 6.0


def test_reduce_multiply_with_zeros():
    x = rand(4, 5)
    x[1, 2] = 0.0  # one zero: only it has a nonzero gradient
    x[2, 0] = x[2, 3] = 0.0  # two zeros: the gradient is zero, the Hessian is not
    x[3, 4] = -0.0
    check_grads(lambda t, i: xo.reduce(t, i, [1], xo.multiply), [x, np.array(1.3)], order=2)
    check_grads(lambda t: sq(xo.reduce(t, 1.0, [0, 1], xo.multiply)), [x[:2]], order=2)
    gx, gi = vjp_of(lambda t, i: xo.reduce(t, i, [1], xo.multiply), x, 2.0)
    others = [np.prod(np.delete(x[1], j)) for j in range(5)]
    np.testing.assert_allclose(gx[1], 2.0 * np.array(others), rtol=1e-14)
    assert gx[1, 2] != 0 and np.all(gx[1, [0, 1, 3, 4]] == 0)
    np.testing.assert_array_equal(gx[2], np.zeros(5))
    np.testing.assert_allclose(gi, np.prod(x, 1).sum(), rtol=1e-14)  # d(init * prod)/d init


@pytest.mark.parametrize("body,init", [(xo.maximum, -INF), (xo.minimum, INF)])
@pytest.mark.parametrize("dims", [[1], [0, 2], [0, 1, 2]])
def test_reduce_max_min(body, init, dims):
    check_grads(lambda x: sq(xo.reduce(x, f64(init), dims, body)), [rand(3, 4, 5)], order=2)


@pytest.mark.parametrize("body", [xo.maximum, xo.minimum])
def test_reduce_max_min_with_a_differentiable_init(body):
    # the init value wins some rows (no ties with elements): it gets their cotangent
    check_grads(lambda x, i: sq(xo.reduce(x, i, [1], body)), [rand(6, 3), np.array(0.05)], order=2)


def test_reduce_max_ties_split_evenly():
    x = np.array(
        [[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0], [-0.0, 0.0, -1.0, -2.0], [1.0, 2.0, 3.0, 4.0]]
    )
    ct = np.array([2.0, 3.0, 4.0, 6.0])
    gx, gi = vjp_of(lambda t, i: xo.reduce(t, i, [1], xo.maximum), x, -INF, ct=ct)
    # evenly among the elements equal to the result (as jax.lax.reduce_max); -0 ties +0
    np.testing.assert_array_equal(gx, [[0, 1, 1, 0], [1, 1, 1, 0], [2, 2, 0, 0], [0, 0, 0, 6]])
    assert gi == 0
    # init 4: it is the result of rows 0 and 2 (no element is); row 3's element 4 ties
    # with it and takes the whole cotangent
    gx, gi = vjp_of(lambda t, i: xo.reduce(t, i, [1], xo.maximum), x, 4.0, ct=ct)
    np.testing.assert_array_equal(gx, [[0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 6]])
    assert gi == 2.0 + 4.0


def test_reduce_init_gets_the_cotangent_where_it_is_the_result():
    x = np.array([[1.0, 3.0], [5.0, 6.0], [np.nan, 1.0]])
    gx, gi = vjp_of(
        lambda t, i: xo.reduce(t, i, [1], xo.minimum), x, 2.0, ct=np.array([1.0, 10.0, 100.0])
    )
    np.testing.assert_array_equal(gx, [[1, 0], [0, 0], [0, 0]])  # NaN row: nothing back
    assert gi == 10.0


def test_reduce_empty_extent():
    gx, gi = vjp_of(
        lambda t, i: xo.reduce(t, i, [1], xo.maximum),
        np.zeros((3, 0)),
        1.5,
        ct=np.array([1.0, 2.0, 3.0]),
    )
    assert gx.shape == (3, 0) and gi == 6.0
    gx, gi = vjp_of(
        lambda t, i: xo.reduce(t, i, [1], xo.multiply),
        np.zeros((3, 0)),
        1.5,
        ct=np.array([1.0, 2.0, 3.0]),
    )
    assert gx.shape == (3, 0) and gi == 6.0


def _argmax_body(av, ai, bv, bi):
    pick_a = xo.or_(
        xo.compare(av, bv, "GT"), xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT"))
    )
    return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)


def test_reduce_variadic_argmax():
    x = np.array([[3.0, 7.0, 7.0, 1.0, 2.0], [0.5, -1.0, 4.0, 4.5, 4.5]])
    idx = xo.iota(1, [2, 5], "i64")

    def f(t):
        v, i = xo.reduce(
            [t, xo.iota(1, list(t.shape), "i64")],
            [f64(-INF), xo.tensor(0, "i64")],
            [1],
            _argmax_body,
        )
        return v

    (gx,) = vjp_of(f, x, ct=np.array([2.0, 3.0]))
    # one-hot at the element the body picks (ties: lowest index)
    np.testing.assert_array_equal(gx, [[0, 2, 0, 0, 0], [0, 0, 0, 3, 0]])
    check_grads(lambda t: sq(f(t)), [rand(4, 7)], order=2)
    # the variadic rule returns a list for the sequence parameter, None for the indices
    t = xo.tensor(x, requires_grad=True)
    v, i = xo.reduce([t, idx], [f64(-INF), xo.tensor(0, "i64")], [1], _argmax_body)
    assert not i.requires_grad
    xo.reduce(v, 0.0, [0], xo.add).backward()
    np.testing.assert_array_equal(np.asarray(t.grad), [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])


def _logaddexp(a, b):
    m = xo.maximum(a, b)
    return xo.add(
        m, xo.log(xo.add(xo.exponential(xo.subtract(a, m)), xo.exponential(xo.subtract(b, m))))
    )


def test_reduce_generic_body():
    # a body of differentiable elementwise ops: the tree is re-run on the tape
    x = rand(3, 7)
    check_grads(lambda t, i: xo.reduce(t, i, [1], _logaddexp), [x, np.array(-0.5)], order=2)
    (gx,) = vjp_of(lambda t: xo.reduce(t, f64(-INF), [1], _logaddexp), x)
    np.testing.assert_allclose(gx, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-12)
    # subtract: recognised, but no kernel; body with a wider element type
    check_grads(lambda t: xo.reduce(t, 0.0, [0], xo.subtract), [rand(5, 2)], order=2)
    wide = lambda a, b: xo.add(xo.convert(a, "f64"), xo.convert(b, "f64"))  # noqa: E731
    x32 = xo.tensor(rand(3, 4).astype(np.float32), requires_grad=True)
    xo.reduce(xo.reduce(x32, xo.tensor(0.0, "f32"), [1], wide), 0.0, [0], xo.add).backward()
    assert x32.grad.dtype == xo.float32 and np.all(np.asarray(x32.grad) == 1)


@primitive("mystery_body_op")
def _mystery(x):
    return xo.multiply(x, 2.0)


def test_reduce_body_without_a_rule_names_the_body():
    def odd_body(a, b):
        return xo.add(a, _mystery(b))

    with pytest.raises(
        xo.SpecError,
        match=r"^reduce \(grad\): no gradient for the body "
        r".*odd_body.*mystery_body_op",
    ):
        xo.grad(lambda t: xo.reduce(xo.reduce(t, 0.0, [0], odd_body), 0.0, [0], xo.add))(
            f64(rand(3, 2))
        )


def test_reduce_narrow_types_keep_their_cotangent_types():
    x = xo.tensor(rand(4, 6), "bf16", requires_grad=True)
    for body, init in [(xo.add, 0.0), (xo.maximum, -INF), (xo.multiply, 1.0)]:
        x.grad = None
        xo.reduce(xo.reduce(x, init, [1], body), 0.0, [0], xo.add).backward()
        assert x.grad.dtype == xo.bfloat16 and x.grad.shape == (4, 6)


# ---------------------------------------------------------------------------------------
# reduce_window
# ---------------------------------------------------------------------------------------

WINDOW_CASES = {
    "plain": dict(),
    "strides": dict(window_strides=[2, 1, 2]),
    "padding": dict(padding=[[1, 0], [0, 2], [-1, 1]]),
    "base_dilation": dict(base_dilations=[2, 1, 2], padding=[[0, 0], [0, 0], [1, 1]]),
    "window_dilation": dict(window_dilations=[1, 2, 2]),
    "everything": dict(
        window_strides=[2, 1, 3],
        base_dilations=[2, 1, 2],
        window_dilations=[1, 2, 1],
        padding=[[1, 1], [2, -1], [0, 3]],
    ),
}


@pytest.mark.parametrize("case", list(WINDOW_CASES))
@pytest.mark.parametrize(
    "body,init",
    [(xo.add, 0.7), (xo.maximum, -INF), (xo.maximum, 0.1), (xo.minimum, INF), (xo.multiply, 1.1)],
    ids=["add", "max", "max_init", "min", "multiply"],
)
def test_reduce_window(case, body, init):
    kw = WINDOW_CASES[case]
    x = rand(3, 4, 5)
    if np.isfinite(init):  # the init value is an argument too
        check_grads(
            lambda t, i: sq(xo.reduce_window(t, i, [2, 2, 3], **kw, body=body)),
            [x, np.array(init)],
            order=2,
        )
    else:  # windows of padding alone would give +-inf

        def f(t):
            out = xo.reduce_window(t, f64(init), [2, 2, 3], **kw, body=body)
            return sq(xo.select(xo.is_finite(out), out, xo.constant(np.zeros(out.shape))))

        check_grads(f, [x], order=2)


def test_reduce_window_add_init_counts_padding():
    # the fold starts from init once per window, and each padding/hole position holds it
    x = rand(5)
    kw = dict(window_strides=[2], base_dilations=[2], padding=[[2, 1]])
    gx, gi = vjp_of(lambda t, i: xo.reduce_window(t, i, [3], **kw, body=xo.add), x, 0.0)
    out = np.asarray(xo.reduce_window(f64(x), 0.0, [3], **kw, body=xo.add))
    out1 = np.asarray(xo.reduce_window(f64(x), 1.0, [3], **kw, body=xo.add))
    assert gi == (out1 - out).sum()
    check_grads(lambda t, i: xo.reduce_window(t, i, [3], **kw, body=xo.add), [x, np.array(0.4)])


def test_reduce_window_max_ties_go_to_the_first_position():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    (gx,) = vjp_of(lambda t: xo.reduce_window(t, f64(-INF), [1, 2], body=xo.maximum), x)
    np.testing.assert_array_equal(gx, [[0, 2, 1, 0], [1, 1, 1, 0]])
    # the same convention on the general path (window dilation)
    (gx,) = vjp_of(
        lambda t: xo.reduce_window(t, f64(-INF), [1, 2], window_dilations=[1, 2], body=xo.maximum),
        x,
    )
    np.testing.assert_array_equal(gx, [[0, 1, 1, 0], [1, 1, 0, 0]])
    # init 4 beats all of row 0's windows
    gx, gi = vjp_of(lambda t, i: xo.reduce_window(t, i, [1, 2], body=xo.maximum), x, 4.0)
    np.testing.assert_array_equal(gx, [[0, 0, 0, 0], [1, 1, 1, 0]])
    # init 5 ties with row 1's 5s: the elements win those ties (init gets row 0 only)
    gx, gi5 = vjp_of(lambda t, i: xo.reduce_window(t, i, [1, 2], body=xo.maximum), x, 5.0)
    np.testing.assert_array_equal(gx, [[0, 0, 0, 0], [1, 1, 1, 0]])
    assert gi5 == 3.0
    assert gi == 3.0


def test_reduce_window_max_padding_wins_for_the_init():
    # init 0 sits in the padding: windows whose maximum is a padding position send
    # their cotangent to the init value
    x = np.array([-1.0, -2.0, 3.0, -4.0])
    gx, gi = vjp_of(
        lambda t, i: xo.reduce_window(t, i, [2], padding=[[1, 1]], body=xo.maximum),
        x,
        0.0,
        ct=np.array([1.0, 2.0, 4.0, 8.0, 16.0]),
    )
    np.testing.assert_array_equal(gx, [0, 0, 12, 0])
    assert gi == 1 + 2 + 16


def test_reduce_window_nan_sends_nothing_back():
    x = np.array([1.0, np.nan, 2.0, 3.0])
    for kw in (dict(), dict(window_dilations=[2])):
        (gx,) = vjp_of(lambda t: xo.reduce_window(t, f64(-INF), [2], **kw, body=xo.maximum), x)
        assert np.isnan(gx).sum() == 0 and gx[1] == 0


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("corner", ["nan", "overflow", "minus_inf"])
def test_max_pool_gradient_nan_windows_and_sums_that_overflow(dt, corner):
    """2 x 2 max pooling's gradient in float32 / float64 (the NaN probe sums the result
    in its own type): a NaN window sends nothing back; results whose sum overflows to
    inf, or is inf - inf (NaN with no NaN result), send every g to its window's first
    maximum (a window of +inf and -inf to its +inf, one of -infs to its first)."""
    big = float(np.finfo(np.dtype(np.float32 if dt == "f32" else np.float64)).max)
    corners = {"nan": [1.0, np.nan, 2.0, 3.0], "overflow": [1.0, big, 2.0, 3.0]}
    corners["minus_inf"] = [-INF] * 4
    x = np.array(
        [[0.0, 0.0, big, big], [0.0, 0.0, 0.5, big], [-INF, INF, big, 1.0], [INF, -INF, 2.0, big]]
    )
    x[:2, :2] = np.reshape(corners[corner], (2, 2))
    g = np.array([[1.0, 2.0], [4.0, 8.0]])
    t = xo.tensor(x[None, None], dt, requires_grad=True)
    out = xo.reduce_window(t, -INF, [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum)
    out.backward(xo.tensor(g[None, None], dt))
    want = np.zeros((4, 4))
    want[0, 2], want[2, 1], want[2, 2] = 2.0, 4.0, 8.0  # first maxima
    want[:2, :2] = {"nan": 0.0, "overflow": [[0, 1], [0, 0]], "minus_inf": [[1, 0], [0, 0]]}[corner]
    np.testing.assert_array_equal(np.asarray(t.grad)[0, 0], want)


def test_reduce_window_variadic():
    x = rand(2, 6)
    idx = xo.iota(1, [2, 6], "i64")

    def f(t):
        v, i = xo.reduce_window(
            [t, idx],
            [f64(-INF), xo.tensor(0, "i64")],
            [1, 3],
            [1, 2],
            padding=[[0, 0], [1, 1]],
            body=_argmax_body,
        )
        return sq(v)

    check_grads(f, [x], order=2)
    check_grads(lambda t: xo.reduce_window(t, f64(-INF), [1, 3], body=_logaddexp), [x], order=2)


def test_reduce_window_bf16_cotangent_types():
    x = xo.tensor(rand(4, 6), "bf16", requires_grad=True)
    for body, init, kw in [
        (xo.add, 0.0, {}),
        (xo.maximum, -INF, {}),
        (xo.maximum, -INF, dict(window_dilations=[2, 1])),
    ]:
        x.grad = None
        out = xo.reduce_window(x, init, [2, 2], **kw, body=body)
        xo.reduce(out, 0.0, [0, 1], xo.add).backward()
        assert x.grad.dtype == xo.bfloat16 and x.grad.shape == (4, 6)


# ---------------------------------------------------------------------------------------
# select_and_scatter
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        dict(window_dimensions=[2, 3], window_strides=[1, 2]),
        dict(window_dimensions=[3, 2], window_strides=[2, 2], padding=[[1, 1], [0, 1]]),
    ],
)
def test_select_and_scatter_source_and_init(kw):
    x = rand(5, 6)
    src_shape = np.asarray(
        xo.reduce_window(
            f64(x),
            -INF,
            kw["window_dimensions"],
            kw.get("window_strides"),
            padding=kw.get("padding"),
            body=xo.maximum,
        )
    ).shape
    s = rand(*src_shape)
    f = lambda src, i: sq(
        xo.select_and_scatter(
            f64(x),
            src,
            i,
            **kw,  # noqa: E731
            select=ge,
            scatter=xo.add,
        )
    )
    check_grads(f, [s, np.array(0.25)], order=2)
    # a select body that is not recognised (the generic path): same gradient
    gt = lambda a, b: xo.compare(a, b, "GT")  # noqa: E731
    f2 = lambda src: xo.select_and_scatter(
        f64(x),
        src,
        0.0,
        **kw,  # noqa: E731
        select=gt,
        scatter=xo.add,
    )
    check_grads(lambda src: sq(f2(src)), [s], order=2)


def test_select_and_scatter_operand_gets_zeros():
    x, s = rand(4, 4), rand(2, 2)
    gx, gs, gi = vjp_of(
        lambda t, src, i: xo.select_and_scatter(
            t, src, i, [2, 2], [2, 2], select=ge, scatter=xo.add
        ),
        x,
        s,
        0.0,
        ct=rand(4, 4),
    )
    np.testing.assert_array_equal(gx, np.zeros((4, 4)))
    assert gs.shape == (2, 2)


def test_select_and_scatter_other_scatter_has_no_rule():
    with pytest.raises(
        xo.SpecError,
        match=r"^select_and_scatter \(grad\): no gradient for the "
        r"scatter body maximum",
    ):
        xo.grad(
            lambda s: xo.reduce(
                xo.select_and_scatter(
                    f64(rand(4)), s, 0.0, [2], [2], select=ge, scatter=xo.maximum
                ),
                0.0,
                [0],
                xo.add,
            )
        )(f64(rand(2)))


def test_max_pool_second_order():
    # max pool -> its rule (select_and_scatter) -> select_and_scatter's rule
    kw = dict(window_strides=[1, 2, 2], padding=[[0, 0], [0, 1], [1, 0]])

    def pool(t):
        return xo.reduce_window(t, f64(-INF), [1, 3, 2], **kw, body=xo.maximum)

    x = rand(2, 5, 6)
    check_grads(lambda t: sq(pool(t)), [x], order=2)
    check_grads(lambda t: xo.multiply(pool(t), pool(xo.multiply(t, t))), [x], order=2)
    # grad of grad, spelled out: d/dx <w, grad(sum(pool^3))(x)>
    w = f64(rand(2, 5, 6))
    h = lambda t: xo.reduce(xo.multiply(sq(pool(t)), pool(t)), 0.0, [0, 1, 2], xo.add)
    gg = xo.grad(lambda t: xo.reduce(xo.multiply(xo.grad(h)(t), w), 0.0, [0, 1, 2], xo.add))(f64(x))
    eps = 1e-6
    d = rand(2, 5, 6)
    num = (
        np.sum(np.asarray(xo.grad(h)(f64(x + eps * d))) * np.asarray(w))
        - np.sum(np.asarray(xo.grad(h)(f64(x - eps * d))) * np.asarray(w))
    ) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(gg) * d), num, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# map
# ---------------------------------------------------------------------------------------


def test_map_two_inputs():
    body = lambda a, b: xo.add(xo.multiply(xo.sine(a), b), xo.multiply(a, a))  # noqa: E731
    check_grads(lambda a, b: xo.map([a, b], [0, 1], body), [rand(3, 4), rand(3, 4)], order=2)
    a = rand(3, 4)
    # a mixed-type map: only the float input gets a cotangent
    n = xo.tensor(np.arange(12).reshape(3, 4), "i32")
    body2 = lambda x, k: xo.multiply(x, xo.convert(k, "f64"))  # noqa: E731
    (ga,) = vjp_of(lambda x: xo.map([x, n], [0, 1], body2), a)
    np.testing.assert_array_equal(ga, np.arange(12).reshape(3, 4))
    # a body with a 0-d (constant) result broadcasts; the gradient is zero
    (ga,) = vjp_of(lambda x: xo.add(xo.map([x], [0, 1], lambda v: xo.constant(2.0, "f64")), x), a)
    np.testing.assert_array_equal(ga, np.ones((3, 4)))


def test_closures_are_never_dropped_silently():
    w = xo.tensor(2.0, "f64", requires_grad=True)
    x = f64([1.0, 2.0, 3.0])
    scale = lambda a: xo.multiply(a, xo.broadcast_in_dim(w, [], list(a.shape)))  # noqa: E731
    # map with no operand needing a gradient records its computation: the closure works
    xo.reduce(xo.map([x], [0], scale), 0.0, [0], xo.add).backward()
    assert float(np.asarray(w.grad)) == 6.0
    w.grad = None
    xo.reduce(xo.map([x], [0], lambda a: w), 0.0, [0], xo.add).backward()  # 0-d result
    assert float(np.asarray(w.grad)) == 3.0
    # with an operand that needs one, the rule cannot reach w: an error, not a zero
    xr = f64([1.0, 2.0, 3.0])
    xr.requires_grad = True
    with pytest.raises(xo.SpecError, match=r"^map \(grad\): the computation .* closure"):
        xo.reduce(xo.map([xr], [0], scale), 0.0, [0], xo.add).backward()
    body = lambda a, b: xo.add(a, scale(b))  # noqa: E731
    with pytest.raises(xo.SpecError, match=r"^reduce \(grad\): the body .* closure"):
        xo.reduce(x, 0.0, [0], body)
    with pytest.raises(xo.SpecError, match=r"^reduce \(grad\): the body .* closure"):
        xo.reduce(xo.reduce(xr, 0.0, [0], body), 0.0, [], xo.add).backward()
    with pytest.raises(xo.SpecError, match=r"^reduce_window \(grad\): the body .* closure"):
        xo.reduce_window(x, 0.0, [2], body=body)
    with xo.no_grad():  # nothing to drop
        assert not xo.reduce(x, 0.0, [0], body).requires_grad


def test_map_single_tensor_argument():
    (ga,) = vjp_of(lambda x: xo.map(x, [0], xo.exponential), np.array([0.0, 1.0]))
    np.testing.assert_allclose(ga, np.exp([0.0, 1.0]), rtol=1e-15)


# ---------------------------------------------------------------------------------------
# A small CNN-style composite: dense layer, max pooling, sum
# ---------------------------------------------------------------------------------------


def test_cnn_style_composite():
    def net(x, w, b):
        h = xo.dot_general(x, w, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
        h = xo.tanh(xo.add(h, xo.broadcast_in_dim(b, [1], [2, 36])))
        img = xo.reshape(h, [2, 6, 6])
        pooled = xo.reduce_window(
            img,
            xo.constant(-INF, "f64"),
            [1, 2, 2],
            [1, 2, 2],
            padding=[[0, 0], [1, 0], [0, 1]],
            body=xo.maximum,
        )
        feats = xo.reduce(pooled, 0.0, [1, 2], xo.add)
        return xo.reduce(sq(feats), 0.0, [0], xo.add)

    args = [rand(2, 8), rand(8, 36) * 0.5, rand(36) * 0.1]
    check_grads(net, args, order=2)
    gx, gw, gb = xo.grad(net, argnums=(0, 1, 2))(*[f64(a) for a in args])
    assert gx.shape == (2, 8) and gw.shape == (8, 36) and gb.shape == (36,)


# ---------------------------------------------------------------------------------------
# Cross-checks with jax.vjp
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jax_x64():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _jax_vjp(jax, f, x, ct):
    _, fn = jax.vjp(f, jax.numpy.asarray(x))
    return np.asarray(fn(jax.numpy.asarray(ct))[0])


@pytest.mark.parametrize("kind", ["max", "min", "prod", "sum"])
def test_reduce_vs_jax(jax_x64, kind):
    lax = jax_x64.lax
    x = np.array(
        [[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0], [0.0, 2.0, 0.0, 1.0], [1.5, 0.0, -2.0, 4.0]]
    )
    jfn = {
        "max": lambda t: lax.reduce_max(t, (1,)),
        "min": lambda t: lax.reduce_min(t, (1,)),
        "prod": lambda t: lax.reduce_prod(t, (1,)),
        "sum": lambda t: lax.reduce_sum(t, (1,)),
    }
    xfn = {
        "max": lambda t: xo.reduce(t, f64(-INF), [1], xo.maximum),
        "min": lambda t: xo.reduce(t, f64(INF), [1], xo.minimum),
        "prod": lambda t: xo.reduce(t, 1.0, [1], xo.multiply),
        "sum": lambda t: xo.reduce(t, 0.0, [1], xo.add),
    }
    ct = np.array([1.0, 2.0, 3.0, 4.0])
    (got,) = vjp_of(xfn[kind], x, ct=ct)
    np.testing.assert_allclose(got, _jax_vjp(jax_x64, jfn[kind], x, ct), rtol=1e-15)


JAX_WINDOWS = [
    dict(window_dimensions=(2, 3), window_strides=(1, 1), padding=((0, 0), (0, 0))),
    dict(window_dimensions=(3, 2), window_strides=(2, 1), padding=((1, 2), (0, 1))),
    dict(
        window_dimensions=(2, 2),
        window_strides=(1, 2),
        padding=((1, 0), (2, 1)),
        base_dilation=(2, 1),
    ),
    dict(
        window_dimensions=(2, 2),
        window_strides=(2, 1),
        padding=((0, 1), (1, 1)),
        base_dilation=(1, 3),
        window_dilation=(2, 1),
    ),
]


@pytest.mark.parametrize("i", range(len(JAX_WINDOWS)))
@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_reduce_window_vs_jax(jax_x64, i, kind):
    lax = jax_x64.lax
    w = JAX_WINDOWS[i]
    if kind != "add" and w.get("window_dilation", (1, 1)) != (1, 1):
        pytest.skip(
            "JAX has no max/min pooling vjp with window dilation (xops: see "
            "test_reduce_window[window_dilation-max])"
        )
    x = np.round(rand(5, 6) * 2) / 2  # ties on purpose: both pick the first position
    init, jop, xop = {
        "add": (0.0, lax.add, xo.add),
        "max": (-INF, lax.max, xo.maximum),
        "min": (INF, lax.min, xo.minimum),
    }[kind]
    bd, wdl = w.get("base_dilation", (1, 1)), w.get("window_dilation", (1, 1))
    jf = lambda t: lax.reduce_window(
        t,
        init,
        jop,
        w["window_dimensions"],  # noqa: E731
        w["window_strides"],
        w["padding"],
        bd,
        wdl,
    )
    xf = lambda t: xo.reduce_window(
        t,
        f64(init),
        list(w["window_dimensions"]),  # noqa: E731
        list(w["window_strides"]),
        list(bd),
        list(wdl),
        [list(p) for p in w["padding"]],
        body=xop,
    )
    out = np.asarray(xf(f64(x)))
    np.testing.assert_array_equal(out, np.asarray(jf(jax_x64.numpy.asarray(x))))
    ct = rand(*out.shape)
    (got,) = vjp_of(xf, x, ct=ct)
    np.testing.assert_allclose(got, _jax_vjp(jax_x64, jf, x, ct), rtol=1e-14, atol=1e-15)


def test_select_and_scatter_vs_jax(jax_x64):
    # JAX's max-pool vjp is its select_and_scatter_add: compare the vjp of that map
    # (select and gather) with xops' select_and_scatter rule for source
    jnp, lax = jax_x64.numpy, jax_x64.lax
    x = rand(5, 6)  # tie-free: XLA's select-and-gather does not promise the first on ties
    dims, strides, pad = (3, 2), (2, 1), ((1, 1), (0, 1))
    pool = lambda t: lax.reduce_window(t, -INF, lax.max, dims, strides, pad)  # noqa: E731
    _, pool_vjp = jax_x64.vjp(pool, jnp.asarray(x))
    src = rand(*pool(jnp.asarray(x)).shape)
    ct = rand(5, 6)
    want = _jax_vjp(jax_x64, lambda s: pool_vjp(s)[0], src, ct)
    (got,) = vjp_of(
        lambda s: xo.select_and_scatter(
            f64(x),
            s,
            0.0,
            list(dims),
            list(strides),
            [list(p) for p in pad],
            select=ge,
            scatter=xo.add,
        ),
        src,
        ct=ct,
    )
    np.testing.assert_allclose(got, want, rtol=1e-15)
