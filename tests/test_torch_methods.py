"""PyTorch's Tensor method spellings (xops/_torch_methods.py): values against NumPy
references, gradients against finite differences, errors, and a table of calls against
PyTorch itself where it is installed."""

import numpy as np
import pytest

import xops as xo
from gradcheck import check_grads

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
K = np.array([[1, 1, 2, 0], [0, 2, 1, 1]])


def T(a):
    return xo.tensor(a)


def test_casts_and_sizes():
    x = T(A * 3)
    assert x.float().dtype == xo.float32 and x.double().dtype == xo.float64
    np.testing.assert_array_equal(np.asarray(x.long()), (A * 3).astype(np.int64))
    assert x.int().dtype == xo.int32 and x.half().dtype == xo.float16
    assert x.bool().dtype.name == "i1"
    assert x.numel() == 12 and x.dim() == 2 and x.contiguous() is x and x.cpu() is x
    assert T([1, 2]).type_as(x).dtype == xo.float64


def test_arithmetic_and_rounding_modes():
    x, y = T(A), T(B)
    np.testing.assert_allclose(np.asarray(x.add(y, alpha=2)), A + 2 * B)
    np.testing.assert_allclose(np.asarray(x.sub(y, alpha=0.5)), A - 0.5 * B)
    a, b = T(np.array([7, -7, 7, -7])), T(np.array([2, 2, -2, -2]))
    np.testing.assert_array_equal(np.asarray(a.div(b, rounding_mode="trunc")), [3, -3, -3, 3])
    np.testing.assert_array_equal(np.asarray(a.div(b, rounding_mode="floor")), [3, -4, -4, 3])
    np.testing.assert_array_equal(np.asarray(a.fmod(b)), np.fmod([7, -7, 7, -7], [2, 2, -2, -2]))
    np.testing.assert_array_equal(
        np.asarray(a.remainder(b)), np.remainder([7, -7, 7, -7], 2 * np.sign([2, 2, -2, -2]))
    )
    np.testing.assert_allclose(np.asarray(x.lerp(y, 0.25)), A + 0.25 * (B - A))
    np.testing.assert_allclose(np.asarray(x.addcmul(y, x, value=2.0)), A + 2 * B * A)
    np.testing.assert_allclose(np.asarray(x.frac()), A - np.trunc(A))
    with pytest.raises(ValueError, match="rounding_mode"):
        x.div(y, rounding_mode="round")


def test_reductions_sorting_and_softmax():
    x = T(A)
    np.testing.assert_allclose(np.asarray(x.amax(1)), A.max(1))
    np.testing.assert_allclose(np.asarray(x.logsumexp(1)), np.log(np.exp(A).sum(1)))
    ninf = T(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    np.testing.assert_array_equal(np.asarray(ninf.logsumexp(1)), [-np.inf, 0.0])
    v, i = x.topk(2)
    np.testing.assert_array_equal(np.asarray(i), np.argsort(-A, 1, kind="stable")[:, :2])
    np.testing.assert_array_equal(np.asarray(v), -np.sort(-A, 1)[:, :2])
    ties = T(np.array([3, 1, 3, 2]))
    s = ties.sort(descending=True)
    np.testing.assert_array_equal(np.asarray(s.indices), [0, 2, 3, 1])  # ties: index order
    np.testing.assert_allclose(
        np.asarray(x.softmax(1)), np.exp(A) / np.exp(A).sum(1, keepdims=True)
    )
    np.testing.assert_allclose(np.asarray(x.norm(p=1, dim=1)), np.abs(A).sum(1))
    np.testing.assert_allclose(x.norm().item(), np.linalg.norm(A))
    with pytest.raises(xo.SpecError, match=r"topk \(k\)"):
        x.topk(5)


def test_shapes():
    x = T(np.arange(10.0))
    assert [p.shape for p in x.split(3)] == [(3,), (3,), (3,), (1,)]
    assert [p.shape for p in x.chunk(3)] == [(4,), (4,), (2,)]
    assert [p.shape for p in T(A).split([1, 3], 1)] == [(3, 1), (3, 3)]
    assert T(A).repeat(2, 1, 3).shape == (2, 3, 12)
    assert T(np.ones((3, 1))).expand(2, -1, 5).shape == (2, 3, 5)
    np.testing.assert_array_equal(np.asarray(T(A).narrow(1, 1, 2)), A[:, 1:3])
    np.testing.assert_array_equal(np.asarray(T(A).select(1, -1)), A[:, -1])
    assert len(T(A).unbind(1)) == 4 and T(A).t().shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(T(A).diagonal(1)), np.diagonal(A, 1))
    np.testing.assert_array_equal(np.asarray(T(np.arange(3.0)).diag(1)), np.diag(np.arange(3.0), 1))
    np.testing.assert_array_equal(np.asarray(T(A).flip(0, 1)), A[::-1, ::-1])
    with pytest.raises(xo.SpecError, match="must add up"):
        T(A).split([1, 2], 1)


def test_gather_scatter_and_masks():
    x = T(A)
    np.testing.assert_array_equal(np.asarray(x.gather(0, T(K))), np.take_along_axis(A, K, 0))
    out = np.zeros((3, 4))
    for i in range(2):  # PyTorch's definition, dim 0
        for j in range(4):
            out[K[i, j], j] = B[i, j]
    np.testing.assert_array_equal(np.asarray(T(np.zeros((3, 4))).scatter(0, T(K), T(B))), out)
    added = np.ones((3, 4))
    np.add.at(added, (K, np.arange(4)), B[:2])
    np.testing.assert_allclose(np.asarray(T(np.ones((3, 4))).scatter_add(0, T(K), T(B))), added)
    amax = A.copy()
    np.maximum.at(amax, (K, np.arange(4)), B[:2])
    np.testing.assert_array_equal(np.asarray(x.scatter_reduce(0, T(K), T(B), "amax")), amax)
    np.testing.assert_array_equal(np.asarray(x.masked_fill(T(A > 0), 0.0)), np.where(A > 0, 0, A))
    np.testing.assert_array_equal(np.asarray(x.masked_select(T(A > 0))), A[A > 0])
    np.testing.assert_array_equal(np.asarray(T(K).nonzero()), np.argwhere(K))
    with pytest.raises(xo.SpecError, match=r"gather \(index\).*out of range"):
        x.gather(1, T(np.array([[4]])))
    with pytest.raises(xo.SpecError, match=r"scatter \(index\)"):
        x.scatter(0, T(np.array([[-1]])), 1.0)


def test_gradients_through_the_methods():
    idx = T(K)
    check_grads(lambda t: t.gather(0, idx), [A])
    check_grads(lambda t, u: t.scatter_add(0, idx, u), [A, B])
    check_grads(lambda t, u: t.scatter_reduce(0, idx, u, "prod"), [A, B])
    check_grads(lambda t: t.logsumexp(1), [A], order=2)
    check_grads(lambda t: t.topk(2).values, [A])
    check_grads(lambda t: t.norm(p=3, dim=0), [A])


def test_in_place_methods_rebind():
    x = T(A)
    old = x
    alias = T(A)
    y = x.add_(T(B))
    assert y is x is old
    np.testing.assert_allclose(np.asarray(x), A + B)
    x.zero_()
    np.testing.assert_array_equal(np.asarray(x), np.zeros((3, 4)))
    x.fill_(2.5).mul_(T(B))
    np.testing.assert_allclose(np.asarray(x), 2.5 * B)
    x.copy_(T(np.arange(4.0)))
    np.testing.assert_array_equal(np.asarray(x), np.broadcast_to(np.arange(4.0), (3, 4)))
    np.testing.assert_array_equal(np.asarray(alias), A)  # (copy-on-write)
    with pytest.raises(xo.SpecError, match="cannot be kept"):
        T(np.arange(3)).div_(T(np.array([2, 2, 2])))  # (an int tensor cannot hold a true quotient)


def test_methods_vs_torch():
    torch = pytest.importorskip("torch")
    calls = [
        ("add", (B,), dict(alpha=2)), ("div", (B,), dict(rounding_mode="floor")),
        ("logsumexp", (1,), {}), ("norm", (), dict(p="fro", dim=(0, 1))), ("amin", (0,), {}),
        ("cumprod", (1,), {}), ("topk", (3,), dict(dim=1, largest=False)),
        ("sort", (), dict(dim=0, descending=True)), ("repeat", (2, 2), {}),
        ("split", (3, 1), {}), ("chunk", (2, 1), {}), ("diagonal", (-1,), {}), ("tril", (1,), {}),
        ("gather", (1, np.array([[0, 3], [1, 1], [2, 0]])), {}),
        ("scatter_reduce", (0, K, B, "mean"), dict(include_self=False)),
        ("index_select", (1, np.array([3, 0, 3])), {}), ("masked_fill", (A > 0.5, -2.0), {}),
        ("lerp", (B, 0.7), {}), ("addcdiv", (B, A + 5), dict(value=0.5)),
        ("roll", ((1, 2), (0, 1)), {}), ("unique", (), dict(return_counts=True)),
    ]  # fmt: skip

    def conv(v, f):
        return f(v) if isinstance(v, np.ndarray) else v

    for name, args, kw in calls:
        want = getattr(torch.tensor(A), name)(*[conv(a, torch.tensor) for a in args], **kw)
        got = getattr(T(A), name)(*[conv(a, T) for a in args], **kw)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-12, err_msg=name)
