"""Gradient rules that skip their inner ops' dispatch outside ``create_graph``
(convolution's two gradient convolutions, max / min pooling's select_and_scatter) give
the bits of the public ops they stand for, and the convolution plan kept per validated
convolution follows the resource limit and the routing switches."""

import numpy as np
import pytest

import xops as xo
from xops.errors import SpecError
from xops.limits import limit_bytes
from xops.ops import _convolution_direct as D
from xops.ops import convolution as C
from xops.ops import windows as W


def _bits(t):
    a = np.ascontiguousarray(np.asarray(t))
    return a.view(f"u{a.dtype.itemsize}")


CONVS = [  # (lhs shape, rhs shape, attributes): the direct kernels, packings, groups
    ((2, 3, 9, 9), (4, 3, 3, 3), dict(padding=[(1, 1), (1, 1)])),
    ((2, 1, 16, 16), (8, 1, 3, 3), dict(padding=[(1, 1), (1, 1)])),
    ((2, 4, 7, 6), (6, 2, 2, 3), dict(window_strides=[2, 1], feature_group_count=2)),
    ((4, 2, 6, 6), (4, 2, 3, 2), dict(batch_group_count=2, padding=[(0, 1), (2, 0)])),
    ((1, 2, 5, 7), (3, 2, 2, 2), dict(lhs_dilation=[2, 1], rhs_dilation=[1, 2])),
    ((2, 2, 6, 5), (3, 2, 3, 3), dict(window_reversal=[True, False], padding=[(1, 1), (0, 2)])),
    ((2, 3, 11), (5, 3, 4), dict(window_strides=[3], padding=[(2, 1)])),
]


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("case", range(len(CONVS)), ids=lambda i: f"conv{i}")
def test_convolution_gradients_are_the_public_ops_bits(case, dt, monkeypatch):
    xs, ws, kw = CONVS[case]
    rng = np.random.default_rng(case)
    # (primals that need no gradient: xo.grad then runs the rules outside create_graph)
    x = xo.tensor(rng.standard_normal(xs), dt)
    w = xo.tensor(rng.standard_normal(ws), dt)
    y = xo.convolution(x, w, **kw)
    g = xo.tensor(rng.standard_normal(y.shape), dt)
    dims = list(range(len(xs)))

    def loss(a, b):
        return xo.reduce(xo.multiply(xo.convolution(a, b, **kw), g), 0.0, dims, xo.add)

    public = []
    real = C.convolution
    monkeypatch.setattr(C, "convolution", lambda *a, **k: public.append(1) or real(*a, **k))
    got = xo.grad(loss, argnums=(0, 1))(x, w)
    assert public == []  # (the rule ran its convolutions' core directly)
    got2 = xo.grad(loss, argnums=(0, 1))(x.detach().requires_grad_(), w)  # (create_graph)
    assert public == [1, 1]
    # the public path: the rule's convolutions through xo.convolution (as under
    # create_graph, which records them)
    monkeypatch.setattr(C, "is_grad_enabled", lambda: True)
    with xo.no_grad():
        want_l = C._grad_lhs(g, w.detach(), C._attributes(
            "convolution", x._dtype, x.shape, w._dtype, w.shape,
            *C._attribute_values((), kw)))  # fmt: skip
        want_r = C._grad_rhs(g, x.detach(), C._attributes(
            "convolution", x._dtype, x.shape, w._dtype, w.shape,
            *C._attribute_values((), kw)))  # fmt: skip
    for a, b in zip((*got, *got2), (want_l, want_r, want_l, want_r)):
        a = a.detach()
        assert a.shape == b.shape and a.dtype == b.dtype
        assert _bits(a).tolist() == _bits(b).tolist()
    # and both are the reference convolution's cotangents
    ref = C.convolution_reference
    eps = 1e-3 if dt == "f32" else 1e-9
    xv, wv = x.numpy().astype(np.float64), w.numpy().astype(np.float64)
    gv = g.numpy().astype(np.float64)
    base = np.sum(np.asarray(ref(xo.tensor(xv), xo.tensor(wv), **kw)) * gv)
    for idx in [(0,) * len(xs), tuple(s - 1 for s in xs)]:
        xp = xv.copy()
        xp[idx] += eps
        fd = (np.sum(np.asarray(ref(xo.tensor(xp), xo.tensor(wv), **kw)) * gv) - base) / eps
        np.testing.assert_allclose(got[0].numpy()[idx], fd, rtol=1e-2, atol=1e-2)


def test_second_order_keeps_recording_the_gradient_convolutions():
    x = xo.tensor(np.linspace(-1, 1, 2 * 2 * 5 * 5).reshape(2, 2, 5, 5), requires_grad=True)
    w = xo.tensor(np.linspace(0.5, -0.5, 3 * 2 * 9).reshape(3, 2, 3, 3), requires_grad=True)

    def loss(a, b):
        y = xo.convolution(a, b, padding=[(1, 1), (1, 1)])
        return xo.reduce(xo.multiply(y, y), 0.0, [0, 1, 2, 3], xo.add)

    gx = xo.grad(lambda a: xo.grad(loss, argnums=0)(a, w).sum())(x)
    # d/dx sum(d loss/dx) = 2 * conv_t(conv_t(1)) pattern: checked by finite differences
    eps = 1e-6
    xv = x.numpy()

    def f(v):
        return float(xo.grad(loss, argnums=0)(xo.tensor(v), w).sum().item())

    for idx in [(0, 0, 0, 0), (1, 1, 2, 3)]:
        xp = xv.copy()
        xp[idx] += eps
        np.testing.assert_allclose(gx.numpy()[idx], (f(xp) - f(xv)) / eps, rtol=1e-4, atol=1e-6)


def test_the_plan_follows_the_resource_limit():
    x = xo.tensor(np.ones((2, 3, 8, 8), np.float32))
    w = xo.tensor(np.ones((4, 3, 3, 3), np.float32))
    first = xo.convolution(x, w, padding=[(1, 1), (1, 1)])
    with limit_bytes(1000):  # (the result alone needs 2 KiB)
        with pytest.raises(SpecError, match="resource limit"):
            xo.convolution(x, w, padding=[(1, 1), (1, 1)])
    again = xo.convolution(x, w, padding=[(1, 1), (1, 1)])
    assert _bits(again).tolist() == _bits(first).tolist()
    assert float(first.numpy()[0, 0, 3, 3]) == 27.0


def test_the_plan_follows_the_routing_switches(monkeypatch):
    x = xo.tensor(np.random.default_rng(0).standard_normal((2, 1, 16, 16)), "f32")
    w = xo.tensor(np.random.default_rng(1).standard_normal((8, 1, 3, 3)), "f32")
    first = xo.convolution(x, w, padding=[(1, 1), (1, 1)])  # (planned: a direct kernel)
    packed = []
    real = C._fast_2d
    monkeypatch.setattr(C, "_fast_2d", lambda *a: packed.append(a[0]) or real(*a))
    monkeypatch.setattr(C, "_FORCE_STRATEGY", "im2col")
    forced = xo.convolution(x, w, padding=[(1, 1), (1, 1)])
    assert packed == ["im2col"]
    np.testing.assert_allclose(forced.numpy(), first.numpy(), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(C, "_FORCE_STRATEGY", None)
    blocked = []
    real_blocked = D._blocked
    monkeypatch.setattr(D, "_blocked", lambda *a: blocked.append(1) or real_blocked(*a))
    assert _bits(xo.convolution(x, w, padding=[(1, 1), (1, 1)])).tolist() == _bits(first).tolist()
    assert blocked == [1] or D._vector_lanes() == 0  # (planned again: the blocked kernel)
    monkeypatch.setattr(D, "_vector_lanes", lambda: 0)  # no blocked kernels: planned again
    other = xo.convolution(x, w, padding=[(1, 1), (1, 1)])
    assert len(blocked) <= 1
    np.testing.assert_allclose(other.numpy(), first.numpy(), rtol=1e-5, atol=1e-5)


def test_convolution_grad_functions_check_the_cotangent_shape():
    x = xo.tensor(np.ones((1, 2, 5, 5), np.float32))
    w = xo.tensor(np.ones((3, 2, 3, 3), np.float32))
    with pytest.raises(SpecError, match=r"convolution.*result shape \[1, 3, 3, 3\]"):
        C.convolution_grad_lhs(xo.tensor(np.ones((1, 3, 4, 4), np.float32)), w, x.shape)
    with pytest.raises(SpecError, match=r"convolution.*result shape \[1, 3, 3, 3\]"):
        C.convolution_grad_rhs(xo.tensor(np.ones((1, 3, 5, 5), np.float32)), x, w.shape)
    g = C.convolution_grad_lhs(xo.tensor(np.ones((1, 3, 3, 3), np.float32)), w, x.shape)
    assert g.shape == x.shape and float(g.numpy()[0, 0, 2, 2]) == 27.0


POOLS = [  # (shape, window, strides, padding)
    ((2, 3, 8, 8), [1, 1, 2, 2], [1, 1, 2, 2], [(0, 0)] * 4),
    ((2, 3, 7, 9), [1, 1, 3, 3], [1, 1, 2, 2], [(0, 0), (0, 0), (1, 1), (1, 0)]),
    ((3, 10), [2, 3], [1, 2], [(0, 1), (1, 1)]),
]


@pytest.mark.parametrize("body", ["maximum", "minimum"])
@pytest.mark.parametrize("case", range(len(POOLS)), ids=lambda i: f"pool{i}")
def test_pool_gradient_is_select_and_scatter_bits(case, body, monkeypatch):
    shape, wd, ws, pad = POOLS[case]
    rng = np.random.default_rng(case)
    xv = rng.integers(-3, 4, shape).astype(np.float32)  # (ties everywhere)
    xv.reshape(-1)[::7] = -0.0
    x = xo.tensor(xv)  # (needs no gradient: the rule runs outside create_graph)
    init = float("-inf") if body == "maximum" else float("inf")
    fn = getattr(xo, body)

    def loss(t):
        y = xo.reduce_window(t, init, wd, ws, padding=pad, body=fn)
        g = xo.tensor(np.arange(1, y.size + 1, dtype=np.float32).reshape(y.shape))
        return xo.reduce(xo.multiply(y, g), 0.0, list(range(len(shape))), xo.add)

    public = []
    real = W.select_and_scatter
    monkeypatch.setattr(W, "select_and_scatter", lambda *a, **k: public.append(1) or real(*a, **k))
    got = xo.grad(loss)(x)
    assert public == []  # (select_and_scatter's kernel path directly)
    monkeypatch.setattr(W, "is_grad_enabled", lambda: True)  # the public op instead
    want = xo.grad(loss)(x)
    assert public == [1]
    assert _bits(got).tolist() == _bits(want).tolist()
    # each window's weight lands on its first extreme element (row-major)
    y = xo.reduce_window(x.detach(), init, wd, ws, padding=pad, body=fn).numpy()
    assert float(got.numpy().sum()) == float(np.arange(1, y.size + 1).sum())


def test_pool_gradient_with_nan_sends_nothing_back_through_the_nan_window():
    xv = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    xv[0, 0, 0, 1] = np.nan
    x = xo.tensor(xv, requires_grad=True)
    g = xo.grad(
        lambda t: xo.reduce(
            xo.reduce_window(t, float("-inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum),
            0.0,
            [0, 1, 2, 3],
            xo.add,
        )
    )(x)
    want = np.zeros((4, 4), np.float32)
    want[1, 3] = want[3, 1] = want[3, 3] = 1.0  # the NaN window (top left) gets nothing
    np.testing.assert_array_equal(g.numpy()[0, 0], want)


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("body", ["maximum", "minimum"])
@pytest.mark.parametrize("dims", [[1], [0], [0, 2], [0, 1, 2]])
def test_reduce_max_min_gradient_is_the_op_rules_bits(dims, body, dt, monkeypatch):
    from xops.ops import reduction as R

    rng = np.random.default_rng(len(dims))
    xv = rng.integers(-2, 3, (4, 5, 3)).astype(np.float64)  # (ties: shares of 1/2, 1/3)
    xv[0, 0, 0] = -0.0
    xv[1, :, 1] = np.nan  # (NaN results send nothing back)
    xv[2, 3, 2] = np.inf
    x = xo.tensor(xv, dt)  # (needs no gradient: the rule runs outside create_graph)
    init = float("-inf") if body == "maximum" else float("inf")
    out_shape = [n for d, n in enumerate(xv.shape) if d not in dims]
    g = xo.tensor(rng.standard_normal(out_shape) * 3, dt)

    def loss(t):
        y = xo.reduce(t, init, dims, getattr(xo, body))
        return xo.reduce(xo.multiply(y, g), 0.0, list(range(len(out_shape))), xo.add)

    used = []
    real = R._reduce_minmax_host
    monkeypatch.setattr(R, "_reduce_minmax_host", lambda *a: used.append(real(*a)) or used[-1])
    got = xo.grad(loss)(x)
    assert used and used[0] is not None
    monkeypatch.setattr(R, "is_grad_enabled", lambda: True)  # the ops' rule
    want = xo.grad(loss)(x)
    assert _bits(got).tolist() == _bits(want).tolist()
    # each output's g split evenly over its extreme elements, nothing through a NaN
    back = got.numpy().astype(np.float64).sum(axis=tuple(dims))
    nan = np.isnan(np.asarray(xo.reduce(x.detach(), init, dims, getattr(xo, body))))
    np.testing.assert_allclose(back[~nan], g.numpy()[~nan], rtol=1e-5)
    assert not back[nan].any()


DOTS = [  # (lhs shape, rhs shape, lb, rb, lc, rc)
    ((3, 4), (5, 4), [], [], [1], [1]),
    ((2, 3, 4), (2, 4, 5), [0], [0], [2], [1]),
    ((4, 2, 3, 5), (3, 5, 4, 6), [0], [2], [2, 3], [0, 1]),
    ((1, 7), (7,), [], [], [1], [0]),
]


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("case", range(len(DOTS)), ids=lambda i: f"dot{i}")
def test_dot_general_gradients_are_the_public_ops_bits(case, dt, monkeypatch):
    from xops.ops import linalg as L

    xs, ys, lb, rb, lc, rc = DOTS[case]
    rng = np.random.default_rng(case)
    x, y = xo.tensor(rng.standard_normal(xs), dt), xo.tensor(rng.standard_normal(ys), dt)
    out = xo.dot_general(x, y, lb, rb, lc, rc)
    g = xo.tensor(rng.standard_normal(out.shape), dt)

    def loss(a, b):
        d = xo.dot_general(a, b, lb, rb, lc, rc)
        return xo.reduce(xo.multiply(d, g), 0.0, list(range(d.ndim)), xo.add)

    public = []
    real = L.dot_general
    monkeypatch.setattr(L, "dot_general", lambda *a, **k: public.append(1) or real(*a, **k))
    got = xo.grad(loss, argnums=(0, 1))(x, y)
    assert public == []
    want = xo.grad(loss, argnums=(0, 1))(x.detach().requires_grad_(), y)  # (create_graph)
    assert public == [1, 1]
    for a, b in zip(got, want):
        assert a.shape == b.shape and _bits(a).tolist() == _bits(b.detach()).tolist()
    # against NumPy: d loss / d x = g contracted with y over y's free dims
    ref = np.einsum  # (the two-operand cases spelled out)
    if case == 0:
        np.testing.assert_allclose(got[0].numpy(), ref("ij,jk->ik", g.numpy(), y.numpy()),
                                   rtol=1e-5)  # fmt: skip
        np.testing.assert_allclose(got[1].numpy(), ref("ij,ik->jk", g.numpy(), x.numpy()),
                                   rtol=1e-5)  # fmt: skip


def test_reduce_window_checked_signatures_follow_the_resource_limit():
    # a signature that passed once is checked again under a lower xops.config.max_bytes
    x = xo.tensor(np.ones((1, 4, 64, 64), np.float32))

    def pool():
        return xo.reduce_window(x, float("-inf"), [1, 1, 2, 2], [1, 1, 2, 2], body=xo.maximum)

    assert pool().shape == (1, 4, 32, 32)
    with limit_bytes(100), pytest.raises(SpecError, match=r"resource limit.*f32\[1,4,32,32\]"):
        pool()
    assert float(pool().numpy().sum()) == 4 * 32 * 32
