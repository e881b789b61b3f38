"""The activations, normalisations, adaptive pooling and losses PyTorch users reach for:
values against NumPy references (PyTorch's definitions), gradients against finite
differences, and everything against PyTorch itself where it is installed."""

import math

import numpy as np
import pytest

import xops as xo
from xops import nn
from gradcheck import check_grads

F = nn.functional


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def T(a):
    return xo.tensor(a)


def _ln_ref(x, axes, eps):
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def _adaptive_ref(x, oh, ow):
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            a, b = (i * h) // oh, -((-(i + 1) * h) // oh)
            c, d = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[..., i, j] = x[..., a:b, c:d].mean(axis=(-2, -1))
    return out


X = np.concatenate([rand(11), [0.0, 30.0, -30.0, 1e-3]])
CASES = {
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "elu": (lambda t: F.elu(t, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "softplus": (
        lambda t: F.softplus(t, 2.0, 10.0),
        lambda x: np.where(2 * x > 10, x, np.log1p(np.exp(2 * x)) / 2),
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_activations(name):
    f, ref = CASES[name]
    np.testing.assert_allclose(np.asarray(f(T(X))), ref(X), rtol=1e-14, atol=1e-300)
    check_grads(f, [rand(9, seed=1)], order=2)


def test_activation_gradients_at_zero_are_pytorchs():
    z = T(np.zeros(1))
    assert xo.grad(lambda t: F.sum(F.leaky_relu(t, 0.3)))(z).item() == pytest.approx(0.3)
    assert xo.grad(lambda t: F.sum(F.elu(t, 2.0)))(z).item() == pytest.approx(2.0)


@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 4, 5), (4, 5))])
def test_layer_norm(shape, norm):
    x = rand(*shape)
    w, b = rand(*norm, seed=2), rand(*norm, seed=3)
    axes = tuple(range(len(shape) - len(norm), len(shape)))
    np.testing.assert_allclose(
        np.asarray(F.layer_norm(T(x), norm, T(w), T(b))), _ln_ref(x, axes, 1e-5) * w + b, rtol=1e-12
    )
    check_grads(lambda t, u, v: F.layer_norm(t, norm, u, v), [x, w, b], order=2)
    layer = nn.LayerNorm(norm, dtype="f64")
    assert layer.weight.shape == norm and layer.bias.shape == norm
    with pytest.raises(ValueError, match="trailing dims"):
        F.layer_norm(T(x), (7,))


def test_group_norm():
    x = rand(2, 6, 3, 2)
    w, b = rand(6, seed=4), rand(6, seed=5)
    g = x.reshape(2, 3, 2, 3, 2)
    want = _ln_ref(g, (2, 3, 4), 1e-5).reshape(x.shape) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(np.asarray(F.group_norm(T(x), 3, T(w), T(b))), want, rtol=1e-12)
    check_grads(lambda t, u: F.group_norm(t, 3, u, None), [x, w])
    with pytest.raises(ValueError, match="must divide"):
        nn.GroupNorm(4, 6)


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (3, 2), 5, (None, 2)])
def test_adaptive_avg_pool2d(size):
    x = rand(2, 3, 7, 5)
    oh, ow = (size, size) if isinstance(size, int) else size
    oh, ow = oh or 7, ow or 5
    got = F.adaptive_avg_pool2d(T(x), size)
    np.testing.assert_allclose(np.asarray(got), _adaptive_ref(x, oh, ow), rtol=1e-12)
    check_grads(lambda t: F.adaptive_avg_pool2d(t, size), [x])
    assert nn.AdaptiveAvgPool2d(size)(T(x[0])).shape == (3, oh, ow)


def _bce_logits_ref(x, t, w=None, pw=None):
    pw = 1.0 if pw is None else pw
    soft = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    per = (1 - t) * x + (1 + (pw - 1) * t) * soft
    return per * (1.0 if w is None else w)


def test_binary_cross_entropy_losses():
    x = np.array([[-50.0, -2.0, 0.0], [0.5, 3.0, 60.0]])
    t = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 1.0]])
    w, pw = np.array([1.0, 0.5, 2.0]), np.array([3.0, 1.0, 0.25])
    for kw in (dict(), dict(weight=w), dict(pos_weight=pw), dict(weight=w, pos_weight=pw)):
        for red, agg in (("mean", np.mean), ("sum", np.sum), ("none", lambda a: a)):
            got = F.binary_cross_entropy_with_logits(T(x), T(t), reduction=red, **kw)
            want = agg(_bce_logits_ref(x, t, kw.get("weight"), kw.get("pos_weight")))
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    check_grads(lambda a: F.binary_cross_entropy_with_logits(a, T(t), w, "sum", pw), [rand(2, 3)])
    p = np.array([0.0, 1e-50, 0.3, 1.0])
    q = np.array([1.0, 0.0, 0.6, 0.5])
    with np.errstate(divide="ignore"):  # (log 0 = -inf: clamped at -100)
        lp, lq = np.maximum(np.log(p), -100), np.maximum(np.log1p(-p), -100)
    np.testing.assert_allclose(
        F.binary_cross_entropy(T(p), T(q)).item(), np.mean(-(q * lp + (1 - q) * lq)), rtol=1e-14
    )
    check_grads(lambda a: F.binary_cross_entropy(a, T(q[1:3])), [np.array([0.2, 0.7])])


def test_regression_losses():
    a, b = rand(5, 3), rand(5, 3, seed=7)
    d = np.abs(a - b)
    np.testing.assert_allclose(F.l1_loss(T(a), T(b)).item(), d.mean(), rtol=1e-14)
    sl1 = np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25)
    np.testing.assert_allclose(
        np.asarray(F.smooth_l1_loss(T(a), T(b), "none", 0.5)), sl1, rtol=1e-14
    )
    hub = np.where(d <= 0.7, 0.5 * d * d, 0.7 * (d - 0.35))
    np.testing.assert_allclose(F.huber_loss(T(a), T(b), "sum", 0.7).item(), hub.sum(), rtol=1e-14)
    for f in (lambda u: F.smooth_l1_loss(u, T(b), beta=0.5), lambda u: F.huber_loss(u, T(b))):
        check_grads(f, [a])
    with pytest.raises(ValueError, match="same shape"):
        F.l1_loss(T(a), T(b[:2]))


def test_modules_vs_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rand(3, 4, 6, 5, seed=11)
    y = (rand(3, 4, 6, 5, seed=12) > 0).astype(np.float64)
    w = np.abs(rand(5, seed=13))
    tw = torch.tensor(w)
    pairs = [
        (nn.LeakyReLU(0.1), torch.nn.LeakyReLU(0.1), (x,)),
        (nn.SiLU(), torch.nn.SiLU(), (x,)),
        (nn.ELU(0.7), torch.nn.ELU(0.7), (x,)),
        (nn.Softplus(1.5, 3.0), torch.nn.Softplus(1.5, 3.0), (x,)),
        (nn.LayerNorm((6, 5), dtype="f64"), torch.nn.LayerNorm((6, 5), dtype=torch.float64), (x,)),
        (nn.GroupNorm(2, 4, dtype="f64"), torch.nn.GroupNorm(2, 4, dtype=torch.float64), (x,)),
        (nn.AdaptiveAvgPool2d((4, 3)), torch.nn.AdaptiveAvgPool2d((4, 3)), (x,)),
        (nn.BCEWithLogitsLoss(pos_weight=w), torch.nn.BCEWithLogitsLoss(pos_weight=tw), (x, y)),
        (nn.BCELoss(), torch.nn.BCELoss(), (1 / (1 + np.exp(-x)), y)),
        (nn.L1Loss(), torch.nn.L1Loss(), (x, y)),
        (nn.SmoothL1Loss(beta=0.3), torch.nn.SmoothL1Loss(beta=0.3), (x, y)),
        (nn.HuberLoss(delta=0.4), torch.nn.HuberLoss(delta=0.4), (x, y)),
    ]  # fmt: skip
    for mine, theirs, args in pairs:
        ta = [torch.tensor(a, requires_grad=True) for a in args]
        want = theirs(*ta)
        want.backward(torch.ones_like(want))
        xa = [xo.tensor(a, requires_grad=True) for a in args]
        got = mine(*xa)
        xo.autodiff.backward(got, xo.tensor(np.ones(got.shape)))
        name = type(mine).__name__
        np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-12, err_msg=name)
        for g, t in zip(xa, ta):
            np.testing.assert_allclose(np.asarray(g.grad), t.grad.numpy(), rtol=1e-10, atol=1e-14,
                                       err_msg=name)  # fmt: skip
    lp = tf.log_softmax(torch.tensor(x), 1).numpy()
    labels = np.random.default_rng(0).integers(0, 4, (3, 6, 5))
    cw = np.arange(1.0, 5.0)
    want = tf.nll_loss(torch.tensor(lp), torch.tensor(labels), weight=torch.tensor(cw)).item()
    assert nn.NLLLoss(weight=cw)(T(lp), T(labels)).item() == pytest.approx(want, rel=1e-12)
    assert math.isfinite(F.softplus(T(np.array([1e4])), 1.0, 20.0).item())


def test_module_casts_and_submodules():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
    assert model.double() is model
    assert all(p.dtype == xo.float64 for p in model.parameters())
    assert all(p.dtype == xo.float32 for p in model.float().parameters())
    assert model.get_submodule("2.0") is model[2][0] and model.get_submodule("") is model
    with pytest.raises(AttributeError, match="no submodule"):
        model.get_submodule("2.5")
    model.add_module("head", nn.Linear(2, 1))
    assert "head.weight" in dict(model.named_parameters())
    assert model.cpu() is model
