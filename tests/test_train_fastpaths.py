"""The training step's host fast paths (issue 15) agree with the ops they stand for:
the fused softmax cross-entropy (value, gradient by finite differences, second order,
NaN logits) against the composite of ops, SGD's host update bit for bit against the
op-by-op update, and the tape's argument binding (defaults, keywords, kept attributes,
``*args``) against ``inspect``."""

import warnings

import numpy as np
import pytest

import xops as xo
from xops import nn, optim
from xops.autodiff import tape
from xops.nn import functional as F
from xops.optim import optimizer as _optimizer


def composite_xent(z, y, reduction):
    """cross_entropy as the ops spell it (the path other shapes take)."""
    return F.nll_loss(F.log_softmax(z, axis=1), y, reduction)


def weighted(loss, w):
    """A scalar from a loss of any reduction (per-item losses weighted by ``w``)."""
    if loss.ndim == 0:
        return loss
    return xo.reduce(xo.multiply(loss, xo.tensor(w, loss.dtype)), 0.0, [0], xo.add)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_matches_the_composite(dtype, reduction):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((6, 5)) * 4
    y = xo.tensor(np.array([0, 4, 2, 2, 1, 3]), "i32")
    w = rng.uniform(0.5, 2.0, 6)
    fused = xo.tensor(z, dtype, requires_grad=True)
    plain = xo.tensor(z, dtype, requires_grad=True)
    a = F.cross_entropy(fused, y, reduction)
    b = composite_xent(plain, y, reduction)
    assert a._node.op == "softmax_cross_entropy"  # (declared as nn.functional.*)
    assert a.dtype == b.dtype and a.shape == b.shape
    tol = 1e-6 if dtype == "f32" else 1e-14
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
    weighted(a, w).backward()
    weighted(b, w).backward()
    np.testing.assert_allclose(np.asarray(fused.grad), np.asarray(plain.grad), atol=tol)


def test_fused_cross_entropy_gradient_by_finite_differences():
    rng = np.random.default_rng(4)
    z = rng.standard_normal((3, 4))
    y = np.array([3, 0, 1])

    def loss(v):
        return F.cross_entropy(xo.tensor(v, "f64"), xo.tensor(y)).item()

    x = xo.tensor(z, "f64", requires_grad=True)
    F.cross_entropy(x, xo.tensor(y)).backward()
    h, num = 1e-6, np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = h
        num[i] = (loss(z + e) - loss(z - e)) / (2 * h)
    np.testing.assert_allclose(np.asarray(x.grad), num, atol=1e-8)


def test_fused_cross_entropy_second_order_matches_the_composite():
    z = xo.tensor(np.random.default_rng(5).standard_normal((4, 3)), "f64")
    y = [0, 2, 1, 1]

    def gradient_norm(loss_fn):
        def f(t):
            g = xo.grad(lambda u: loss_fn(u, y, "mean"))(t)
            return xo.reduce(xo.multiply(g, g), 0.0, [0, 1], xo.add)

        return np.asarray(xo.grad(f)(z))

    np.testing.assert_allclose(
        gradient_norm(F.cross_entropy), gradient_norm(composite_xent), atol=1e-15
    )


def test_fused_cross_entropy_nan_and_inf_logits_warn_nothing():
    z = np.array([[np.nan, 0.0, 1.0], [np.inf, 0.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    x = xo.tensor(z, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.cross_entropy(x, xo.tensor([1, 0, 2]), reduction="none")
        weighted(loss, np.ones(3)).backward()
    v = np.asarray(loss)
    assert np.isnan(v[0]) and np.isnan(v[1]) and np.isfinite(v[2])
    g = np.asarray(x.grad)
    assert np.isnan(g[:2]).all() and np.isfinite(g[2]).all()


def test_cross_entropy_outside_the_fused_path_still_uses_the_ops():
    z = xo.tensor(np.random.default_rng(6).standard_normal((2, 3, 4)), requires_grad=True)
    loss = F.cross_entropy(z, xo.tensor(np.array([[0, 1, 2, 0], [2, 2, 1, 0]])))
    assert loss._node.op != "softmax_cross_entropy"  # (N, C, L): the composite
    z16 = xo.tensor(np.ones((2, 3)), "bf16", requires_grad=True)
    assert F.cross_entropy(z16, xo.tensor([0, 1]))._node.op != "softmax_cross_entropy"


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=0.1),
        dict(lr=0.05, weight_decay=0.01),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.02),
        dict(lr=0.03, momentum=0.8, nesterov=True),
    ],
)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_sgd_host_update_is_bit_identical_to_the_ops(kw, dtype, monkeypatch):
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(3)]

    def run():
        p = xo.tensor(p0, dtype, requires_grad=True)
        opt = optim.SGD([p], **kw)
        for g in grads:
            p.grad = xo.tensor(g, dtype)
            opt.step()
        return np.asarray(p).copy()

    host = run()
    monkeypatch.setattr(_optimizer, "host_floats", lambda *ts: None)
    ops = run()
    assert host.dtype == ops.dtype and host.tobytes() == ops.tobytes()


def test_sgd_host_update_overflows_to_inf_without_a_warning():
    p = xo.tensor(np.array([3e38, -1.0], np.float32), requires_grad=True)
    p.grad = xo.tensor(np.array([-3e38, 1.0], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.SGD([p], lr=10.0).step()
    assert np.isinf(np.asarray(p)[0]) and np.asarray(p)[1] == np.float32(-11.0)


@tape.primitive("fastpath_scale_shift")
def scale_shift(x, scale=2.0, shift=0.0):
    return xo.add(xo.multiply(x, scale), shift)


@scale_shift.defvjp
def _scale_shift_vjp(g, out, x, scale, shift):
    assert isinstance(scale, float) and isinstance(shift, float)  # bound, defaults in
    return (xo.multiply(g, scale),)


@tape.primitive("fastpath_sum_all")
def sum_all(*xs, weight=1.0):
    return xo.multiply(xo.add(xs[0], xs[1]), weight)


@sum_all.defvjp
def _sum_all_vjp(g, out, xs, weight):
    return ([xo.multiply(g, weight), xo.multiply(g, weight)], None)


@tape.primitive("fastpath_keyword_only")
def keyword_only(x, scale=2.0, *, shift, power=1.0):
    return xo.add(xo.multiply(x, scale), shift)


@keyword_only.defvjp
def _keyword_only_vjp(g, out, x, scale, shift, power):
    assert (scale, power) in ((2.0, 1.0), (3.0, 7.0)) and shift == 1.0  # bound in order
    return (xo.multiply(g, scale),)


def test_keyword_only_parameters_bind_in_signature_order():
    """The tape's binder and ``bound_arguments`` bind keyword-only parameters by name
    (defaults applied, signature order) and leave errors to inspect."""
    from xops.ops._core import bound_arguments

    x = xo.tensor([1.0, 2.0], requires_grad=True)
    for call, want in [
        (lambda: keyword_only(x, shift=1.0), 2.0),
        (lambda: keyword_only(x, 3.0, power=7.0, shift=1.0), 3.0),
    ]:
        x.grad = None
        xo.reduce(call(), 0.0, [0], xo.add).backward()
        np.testing.assert_array_equal(np.asarray(x.grad), [want, want])
    for bad in [(x, 1.0, 2.0), (x,)]:  # too many positional / missing keyword-only
        with pytest.raises(TypeError):
            keyword_only(*bad, **({} if len(bad) == 1 else {"shift": 1.0}))

    def f(a, b=2, *, c, d=4):
        pass

    assert list(bound_arguments(f, (1,), {"c": 3}).items()) == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 4)
    ]  # fmt: skip
    assert list(bound_arguments(f, (1, 5), {"d": 6, "c": 3}).items()) == [
        ("a", 1), ("b", 5), ("c", 3), ("d", 6)
    ]  # fmt: skip
    for args, kwargs in [((1,), {}), ((1, 2, 3), {"c": 1}), ((1,), {"c": 1, "a": 2})]:
        with pytest.raises(TypeError):
            bound_arguments(f, args, kwargs)


def test_the_tape_binds_defaults_keywords_and_varargs():
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    for call, want in [
        (lambda: scale_shift(x), 2.0),
        (lambda: scale_shift(x, 3.0), 3.0),
        (lambda: scale_shift(x, shift=1.0), 2.0),
        (lambda: scale_shift(x, scale=5.0, shift=1.0), 5.0),
    ]:
        x.grad = None
        xo.reduce(call(), 0.0, [0], xo.add).backward()
        np.testing.assert_array_equal(np.asarray(x.grad), [want, want])
    x.grad = None
    xo.reduce(sum_all(x, x, weight=4.0), 0.0, [0], xo.add).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [8.0, 8.0])
    with pytest.raises(TypeError):
        scale_shift(x, 1.0, 2.0, 3.0)  # too many arguments: inspect's own error
    with pytest.raises(TypeError):
        scale_shift(x, bogus=1.0)


def test_training_with_the_fused_loss_follows_the_composite(monkeypatch):
    rng = np.random.default_rng(8)
    xv = rng.standard_normal((16, 4))
    x = xo.tensor(xv, "f32")
    y = xo.tensor((xv[:, 0] + xv[:, 1] > 0).astype(np.int32))
    w0, b0 = rng.standard_normal((2, 4)) * 0.1, np.zeros(2)

    def train():
        model = nn.Linear(4, 2)
        nn.assign_(model.weight, xo.tensor(w0, "f32"))
        nn.assign_(model.bias, xo.tensor(b0, "f32"))
        opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.5)
        losses = []
        for _ in range(20):
            loss = F.softmax_cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses), np.asarray(model.weight)

    fused, w_fused = train()
    monkeypatch.setattr(F, "_fusable", lambda *a: False)
    ops, w_ops = train()
    assert fused[-1] < fused[0] * 0.5  # it learns
    np.testing.assert_allclose(fused, ops, rtol=1e-5)
    np.testing.assert_allclose(w_fused, w_ops, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_batch_norm_running_statistics_host_update_is_bit_identical(dtype, monkeypatch):
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((5, 3, 2, 2)) * 3 + 1 for _ in range(3)]

    def run():
        bn = nn.BatchNorm2d(3, momentum=0.3).to(dtype)
        for v in xs:
            bn(xo.tensor(v, dtype))
        return np.asarray(bn.running_mean).copy(), np.asarray(bn.running_var).copy()

    host = run()
    monkeypatch.setattr(F, "host_floats", lambda *ts: None)  # every update through the ops
    ops = run()
    for a, b in zip(host, ops):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    mean = np.zeros(3)  # and both agree with the formula
    for v in xs:
        mean = 0.7 * mean + 0.3 * v.mean(axis=(0, 2, 3))
    np.testing.assert_allclose(host[0], mean, rtol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.Adam(ps, lr=0.1),
        lambda ps: optim.Adam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.02),
        lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    ],
    ids=["adam", "adam-l2", "adamw"],
)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_adam_host_update_is_bit_identical_to_the_ops(make, dtype, monkeypatch):
    rng = np.random.default_rng(10)
    p0 = rng.standard_normal((2, 3)) * 3
    grads = [rng.standard_normal((2, 3)) * 10.0**k for k in (-3, 0, 2, 0)]

    def run(restart_at=None):
        p = xo.tensor(p0, dtype, requires_grad=True)
        opt = make([p])
        for i, g in enumerate(grads):
            if i == restart_at:  # state saved and loaded into a new optimizer
                saved = opt.state_dict()
                opt = make([p])
                opt.load_state_dict(saved)
            p.grad = xo.tensor(g, dtype)
            opt.step()
        st = opt.state[id(p)]
        return [np.asarray(v).copy() for v in (p, st["exp_avg"], st["exp_avg_sq"])], st["step"]

    host, steps = run()
    assert steps == len(grads)
    assert run(restart_at=2)[0][0].tobytes() == host[0].tobytes()
    monkeypatch.setattr(_optimizer, "host_floats", lambda *ts: None)
    ops, _ = run()
    for a, b in zip(host, ops):
        assert a.dtype == b.dtype == xo.as_dtype(dtype).np and a.tobytes() == b.tobytes()
    # and the first step is Adam's: p - lr * sign(g) (up to eps) for bias-corrected m, v
    p = xo.tensor(p0, "f64", requires_grad=True)
    p.grad = xo.tensor(grads[1], "f64")
    optim.Adam([p], lr=0.1, eps=0.0).step()
    np.testing.assert_allclose(np.asarray(p), p0 - 0.1 * np.sign(grads[1]), rtol=1e-12)


def test_adam_host_update_keeps_states_immutable_and_skips_bf16():
    p = xo.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = xo.tensor(np.ones(3, np.float32))
    opt.step()
    saved = opt.state_dict()
    m = np.asarray(saved["state"][0]["exp_avg"]).copy()
    opt.step()
    assert np.asarray(saved["state"][0]["exp_avg"]).tobytes() == m.tobytes()  # a snapshot
    with pytest.raises(ValueError):
        np.asarray(saved["state"][0]["exp_avg"])[0] = 5.0  # read-only
    q = xo.tensor(np.ones(3), "bf16", requires_grad=True)  # through the ops
    q.grad = xo.tensor(np.full(3, 0.5), "bf16")
    optim.Adam([q], lr=0.25).step()
    assert q.dtype.name == "bf16" and np.asarray(q, np.float32).tolist() == [0.75] * 3
