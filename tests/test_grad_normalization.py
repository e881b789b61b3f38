"""Gradient rules of batch_norm_training, batch_norm_inference and batch_norm_grad
(xops/ops/normalization.py): central finite differences in float64, first and second
order, for feature_index 0, 1 and last; cotangents on all three outputs of training
mode; the closed forms; the cotangents' element types for narrow floats; and a
torch.autograd cross-check (forward, backward and double backward) on NCHW."""

import numpy as np
import pytest

import xops as xo
from gradcheck import check_grads
from xops.ops import normalization

RNG = np.random.default_rng(7)
EPS = 2.0**-7  # exact in f32, so torch (which takes epsilon as a double) agrees
SHAPE = (3, 4, 5)


def f64(v):
    return xo.tensor(np.asarray(v, np.float64))


def _inputs(fi, shape=SHAPE):
    """Random operand, scale, offset, mean, variance (> 0) and grad_output."""
    C = shape[fi]
    return dict(
        x=RNG.standard_normal(shape),
        s=RNG.standard_normal(C),
        o=RNG.standard_normal(C),
        m=RNG.standard_normal(C),
        v=RNG.random(C) + 0.5,
        g=RNG.standard_normal(shape),
    )


def _others(fi, rank):
    return tuple(d for d in range(rank) if d != fi)


def _b(v, fi, rank):
    shape = [1] * rank
    shape[fi] = -1
    return np.reshape(v, shape)


def _sum_all(t):
    return xo.reduce(t, xo.constant(0, t.dtype), list(range(t.ndim)), xo.add)


# ---------------------------------------------------------------------------------------
# The ops are primitives with rules; the no-grad path is unchanged
# ---------------------------------------------------------------------------------------


def test_every_public_op_is_a_primitive_with_a_rule():
    for name in normalization.__all__:
        fn = getattr(normalization, name)
        assert hasattr(fn, "op_name"), f"xo.{name} is not a @primitive"
        assert fn.op_name == name
        assert fn._vjp is not None, f"xo.{name} has no gradient rule"
        assert getattr(xo, name) is fn


def test_no_grad_path_records_nothing_and_matches_the_implementation():
    d = _inputs(1)
    x, s, o = f64(d["x"]), f64(d["s"]), f64(d["o"])
    outs = xo.batch_norm_training(x, s, o, EPS, 1)
    raw = normalization.batch_norm_training.__wrapped__(x, s, o, EPS, 1)
    for a, b in zip(outs, raw):
        assert not a.requires_grad and a._node is None
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    xr = f64(d["x"])
    xr.requires_grad = True
    with xo.no_grad():
        assert all(t._node is None for t in xo.batch_norm_training(xr, s, o, EPS, 1))


# ---------------------------------------------------------------------------------------
# Finite differences, first and second order, feature_index 0, 1, last
# ---------------------------------------------------------------------------------------

FIS = [0, 1, 2]


@pytest.mark.parametrize("fi", FIS)
def test_training_first_and_second_order(fi):
    """Random cotangents on all three outputs (output, batch_mean, batch_var), all three
    inputs; order 2 differentiates the rule (batch_norm_grad's rule, the mean/var terms)."""
    d = _inputs(fi)
    check_grads(
        lambda x, s, o: xo.batch_norm_training(x, s, o, EPS, fi), [d["x"], d["s"], d["o"]], order=2
    )


@pytest.mark.parametrize("fi", FIS)
def test_inference_first_and_second_order(fi):
    d = _inputs(fi)
    check_grads(
        lambda x, s, o, m, v: xo.batch_norm_inference(x, s, o, m, v, EPS, fi),
        [d["x"], d["s"], d["o"], d["m"], d["v"]],
        order=2,
    )


@pytest.mark.parametrize("fi", FIS)
def test_grad_first_and_second_order(fi):
    """All five tensor inputs, cotangents on all three outputs; order 2 checks that the
    closed-form rule is itself differentiable (third derivatives of batch norm)."""
    d = _inputs(fi)
    check_grads(
        lambda x, s, m, v, g: xo.batch_norm_grad(x, s, m, v, g, EPS, fi),
        [d["x"], d["s"], d["m"], d["v"], d["g"]],
        order=2,
    )


@pytest.mark.parametrize("shape,fi", [((6, 3), 1), ((5,), 0), ((2, 3, 2, 2), 3)])
def test_other_ranks(shape, fi):
    d = _inputs(fi, shape)
    check_grads(
        lambda x, s, o: xo.batch_norm_training(x, s, o, EPS, fi), [d["x"], d["s"], d["o"]], order=2
    )
    check_grads(
        lambda x, s, m, v, g: xo.batch_norm_grad(x, s, m, v, g, EPS, fi),
        [d["x"], d["s"], d["m"], d["v"], d["g"]],
    )


@pytest.mark.parametrize("which", [0, 1, 2])
def test_training_each_output_alone(which):
    """A cotangent on one output only (the others are the engine's zeros, skipped)."""
    d = _inputs(1)
    check_grads(
        lambda x, s, o: xo.batch_norm_training(x, s, o, EPS, 1)[which],
        [d["x"], d["s"], d["o"]],
        order=2,
    )


def test_second_order_of_a_small_batch_norm_network():
    """loss = sum(tanh(bn_train(x W)) * t) + sum(bn_infer(...)) ** 2-ish: grad of grad
    (Hessian-vector products) in x, W, scale and offset against finite differences."""
    x = RNG.standard_normal((6, 4))
    w = RNG.standard_normal((4, 3))
    s = RNG.standard_normal(3)
    o = RNG.standard_normal(3)
    t = f64(RNG.standard_normal((6, 3)))

    def loss(x, w, s, o):
        h = xo.dot_general(x, w, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
        y, mean, var = xo.batch_norm_training(h, s, o, EPS, 1)
        z = xo.batch_norm_inference(xo.tanh(y), s, o, mean, var, EPS, 1)
        return xo.add(_sum_all(xo.multiply(z, t)), _sum_all(xo.multiply(mean, var)))

    check_grads(loss, [x, w, s, o], order=2)

    # and xo.grad(xo.grad(.)) runs end to end: d/dx of <grad_x loss, ones>
    def gsum(x):
        gx = xo.grad(loss)(x, f64(w), f64(s), f64(o))
        return _sum_all(xo.multiply(gx, gx))

    check_grads(gsum, [x])


# ---------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------


def test_training_output_cotangent_is_batch_norm_grad_exactly():
    d = _inputs(1)
    x, s, o, g = f64(d["x"]), f64(d["s"]), f64(d["o"]), f64(d["g"])
    (y, mean, var), fn = xo.vjp(lambda x, s, o: xo.batch_norm_training(x, s, o, EPS, 1), x, s, o)
    zm, zv = f64(np.zeros(4)), f64(np.zeros(4))
    got = fn((g, zm, zv))
    want = xo.batch_norm_grad(x, s, mean, var, g, EPS, 1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_training_mean_and_var_cotangents_closed_form():
    fi = 2
    d = _inputs(fi)
    x = d["x"]
    N = x.size // x.shape[fi]
    gm, gv = RNG.standard_normal(5), RNG.standard_normal(5)
    _, fn = xo.vjp(
        lambda x: xo.batch_norm_training(x, f64(d["s"]), f64(d["o"]), EPS, fi)[1:], f64(x)
    )
    (gx,) = fn((f64(gm), f64(gv)))
    mean = x.mean(axis=_others(fi, 3), keepdims=True)
    want = _b(gm, fi, 3) / N + 2 * _b(gv, fi, 3) * (x - mean) / N
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-12, atol=1e-14)


def test_inference_closed_form():
    fi = 0
    d = _inputs(fi)
    x, s, m, v, g = d["x"], d["s"], d["m"], d["v"], d["g"]
    _, fn = xo.vjp(lambda *a: xo.batch_norm_inference(*a, EPS, fi), *[f64(d[k]) for k in "xsomv"])
    gx, gs, go, gm, gv = [np.asarray(t) for t in fn(f64(g))]
    ax = _others(fi, 3)
    inv = 1 / np.sqrt(v + EPS)
    c = x - _b(m, fi, 3)
    np.testing.assert_allclose(gx, g * _b(s * inv, fi, 3), rtol=1e-12)
    np.testing.assert_allclose(gs, (g * c).sum(ax) * inv, rtol=1e-12)
    np.testing.assert_allclose(go, g.sum(ax), rtol=1e-12)
    np.testing.assert_allclose(gm, -g.sum(ax) * s * inv, rtol=1e-12)
    np.testing.assert_allclose(gv, -0.5 * (g * c).sum(ax) * s * inv**3, rtol=1e-12)


def test_grad_rule_matches_the_decomposition_on_the_tape():
    """batch_norm_grad's closed-form vjp against the vjp of its formula written with
    xops ops (differentiated op by op by the engine)."""
    fi = 1
    d = _inputs(fi)
    shape = SHAPE
    N = float(np.prod(shape) // shape[fi])

    def decomposed(x, s, m, v, g):
        B = lambda t: xo.broadcast_in_dim(t, [fi], shape)  # noqa: E731
        S = lambda t: xo.reduce(t, xo.constant(0, t.dtype), [0, 2], xo.add)  # noqa: E731
        inv = xo.rsqrt(xo.add(v, EPS))
        xhat = xo.multiply(xo.subtract(x, B(m)), B(inv))
        mg = xo.divide(S(g), N)
        mgx = xo.divide(S(xo.multiply(g, xhat)), N)
        gx = xo.multiply(
            B(xo.multiply(s, inv)), xo.subtract(xo.subtract(g, B(mg)), xo.multiply(xhat, B(mgx)))
        )
        return gx, S(xo.multiply(g, xhat)), S(g)

    args = [f64(d[k]) for k in ("x", "s", "m", "v", "g")]
    cts = (
        f64(RNG.standard_normal(shape)),
        f64(RNG.standard_normal(4)),
        f64(RNG.standard_normal(4)),
    )
    outs, fn = xo.vjp(lambda *a: xo.batch_norm_grad(*a, EPS, fi), *args)
    outs2, fn2 = xo.vjp(decomposed, *args)
    for a, b in zip(outs, outs2):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    for a, b in zip(fn(cts), fn2(cts)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def test_only_some_inputs_require_gradients():
    d = _inputs(1)
    x = f64(d["x"])
    s = f64(d["s"])
    s.requires_grad = True
    y, _, _ = xo.batch_norm_training(x, s, d["o"], EPS, 1)  # offset as a NumPy array
    y.backward(f64(d["g"]))
    ax = _others(1, 3)
    xhat = (d["x"] - d["x"].mean(ax, keepdims=True)) / np.sqrt(d["x"].var(ax, keepdims=True) + EPS)
    np.testing.assert_allclose(np.asarray(s.grad), (d["g"] * xhat).sum(ax), rtol=1e-10)
    assert x.grad is None


# ---------------------------------------------------------------------------------------
# Element types of the cotangents
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["f32", "bf16", "f16"])
def test_cotangent_types_and_values(dt):
    fi = 1
    d = _inputs(fi)
    T = lambda k: xo.tensor(d[k], dt)  # noqa: E731
    ref = lambda k: np.asarray(xo.convert(T(k), "f64"))  # noqa: E731
    tol = dict(rtol=2e-2, atol=2e-2) if dt != "f32" else dict(rtol=1e-4, atol=1e-5)

    cases = [
        (lambda *a: xo.batch_norm_training(*a, EPS, fi), "xso", 3),
        (lambda *a: xo.batch_norm_inference(*a, EPS, fi), "xsomv", 1),
        (lambda *a: xo.batch_norm_grad(*a, EPS, fi), "xsmvg", 3),
    ]
    for f, keys, nout in cases:
        args = [T(k) for k in keys]
        out, fn = xo.vjp(f, *args)
        outs = out if nout > 1 else (out,)
        cts = tuple(xo.tensor(RNG.standard_normal(o.shape), dt) for o in outs)
        got = fn(cts if nout > 1 else cts[0])
        for g, a in zip(got, args):
            assert g.dtype is a.dtype and g.shape == a.shape, (keys, g.type, a.type)
        # values: the same vjp in f64 on the same (rounded) inputs
        _, fn64 = xo.vjp(f, *[f64(ref(k)) for k in keys])
        c64 = tuple(xo.convert(c, "f64") for c in cts)
        want = fn64(c64 if nout > 1 else c64[0])
        for g, w in zip(got, want):
            scale = max(1.0, float(np.abs(np.asarray(w)).max()))
            np.testing.assert_allclose(
                np.asarray(xo.convert(g, "f64")) / scale, np.asarray(w) / scale, **tol
            )


def test_narrow_second_order_keeps_types():
    d = _inputs(1)
    x, s, o = (xo.tensor(d[k], "bf16") for k in "xso")

    def loss(x):
        y, mean, var = xo.batch_norm_training(x, s, o, EPS, 1)
        return _sum_all(xo.add(xo.multiply(y, y), xo.multiply(y, x)))

    hx = xo.grad(lambda x: _sum_all(xo.grad(loss)(x)))(x)
    assert hx.dtype is x.dtype and hx.shape == x.shape


# ---------------------------------------------------------------------------------------
# torch.autograd cross-check (training mode, NCHW)
# ---------------------------------------------------------------------------------------


def test_training_matches_torch_autograd_nchw():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3, 5, 6))
    s = RNG.standard_normal(3)
    o = RNG.standard_normal(3)
    g = RNG.standard_normal(x.shape)
    gm = RNG.standard_normal(3)
    gv = RNG.standard_normal(3)

    tx, ts, to = (torch.tensor(a, requires_grad=True) for a in (x, s, o))
    ty = torch.nn.functional.batch_norm(tx, None, None, ts, to, training=True, eps=EPS)
    tvar, tmean = torch.var_mean(tx, dim=(0, 2, 3), unbiased=False)  # biased, as the spec
    tloss = (
        (ty * torch.tensor(g)).sum()
        + (tmean * torch.tensor(gm)).sum()
        + (tvar * torch.tensor(gv)).sum()
    )
    tgrads = torch.autograd.grad(tloss, (tx, ts, to), create_graph=True)
    # double backward: d/d(inputs) of <grad, w>
    ws = [RNG.standard_normal(a.shape) for a in (x, s, o)]
    tsecond = torch.autograd.grad(
        sum((tg * torch.tensor(w)).sum() for tg, w in zip(tgrads, ws)),
        (tx, ts, to),
        allow_unused=True,
    )  # offset: linear
    tsecond = [np.zeros(a.shape) if t is None else t.numpy() for t, a in zip(tsecond, (x, s, o))]

    def loss(x, s, o):
        y, mean, var = xo.batch_norm_training(x, s, o, EPS, 1)
        return xo.add(
            xo.add(_sum_all(xo.multiply(y, f64(g))), _sum_all(xo.multiply(mean, f64(gm)))),
            _sum_all(xo.multiply(var, f64(gv))),
        )

    y, mean, var = xo.batch_norm_training(f64(x), f64(s), f64(o), EPS, 1)
    np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(mean), tmean.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(var), tvar.detach().numpy(), rtol=1e-10, atol=1e-12)

    grads = xo.grad(loss, (0, 1, 2))(f64(x), f64(s), f64(o))
    for a, b in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-9, atol=1e-11)

    def inner(x, s, o):
        gx, gs, go = xo.grad(loss, (0, 1, 2))(x, s, o)
        return xo.add(
            xo.add(_sum_all(xo.multiply(gx, f64(ws[0]))), _sum_all(xo.multiply(gs, f64(ws[1])))),
            _sum_all(xo.multiply(go, f64(ws[2]))),
        )

    second = xo.grad(inner, (0, 1, 2))(f64(x), f64(s), f64(o))
    for a, b in zip(second, tsecond):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-8, atol=1e-10)


def test_backward_with_create_graph():
    """The PyTorch-style API: x.grad from .backward(create_graph=True) is differentiable."""
    d = _inputs(1)
    x = f64(d["x"])
    x.requires_grad = True
    s, o = f64(d["s"]), f64(d["o"])
    y, _, _ = xo.batch_norm_training(x, s, o, EPS, 1)
    _sum_all(xo.multiply(y, xo.tanh(y))).backward(create_graph=True)
    gx = x.grad
    assert gx.requires_grad
    x.grad = None
    _sum_all(xo.multiply(gx, gx)).backward()
    assert x.grad is not None and x.grad.shape == x.shape
    assert np.all(np.isfinite(np.asarray(x.grad)))
