"""maximum/minimum's gradient rule: the one-pass CPU path (f32/f64 NumPy-held operands,
no create_graph; issue 15) gives the same bits as the composite rule of compares and
selects, which bf16/f16, create_graph and second order still use."""

import numpy as np
import pytest

import xops as xo
from xops.ops.elementwise import arithmetic as A

from gradcheck import check_grads

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 2.5]


def _data(rng, n, np_type):
    """Values with many ties (a small pool), signed zeros, NaN and infinities."""
    pool = np.array(SPECIAL + list(rng.standard_normal(4)), np.float64)
    return pool[rng.integers(0, pool.size, n)].astype(np_type)


def _bits(t):
    v = np.asarray(t._value)
    return v.view(f"u{v.dtype.itemsize}")


def _both_rules(g, out, lhs, rhs, monkeypatch, is_max):
    """(one-pass rule, composite rule) cotangents of one recorded call of maximum
    (``is_max``) or minimum."""
    with xo.no_grad():
        fast = A._minmax_vjp(g, out, lhs, rhs, is_max)
        with monkeypatch.context() as m:
            m.setattr(A, "_minmax_vjp_cpu", lambda *a: None)
            slow = A._minmax_vjp(g, out, lhs, rhs, is_max)
    return fast, slow


def _same(fast, slow):
    assert len(fast) == len(slow) == 2
    for f, s in zip(fast, slow):
        assert (f is None) == (s is None)
        if f is not None:
            assert f.dtype == s.dtype and f.shape == s.shape
            np.testing.assert_array_equal(_bits(f), _bits(s))


@pytest.mark.parametrize("name", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("op", [xo.maximum, xo.minimum])
def test_bits_match_composite_rule(name, op, monkeypatch):
    rng = np.random.default_rng(7)
    np_type = xo.tensor([0.0], name)._value.dtype
    shape = (3, 50)
    x = xo.tensor(_data(rng, 150, np_type).reshape(shape), name, requires_grad=True)
    y = xo.tensor(_data(rng, 150, np_type).reshape(shape), name, requires_grad=True)
    g = xo.tensor(_data(rng, 150, np_type).reshape(shape), name)
    scalars = (0.0, -0.0, np.inf, -np.inf, np.nan, 1)
    pairs = [(x, y), (y, x), (x, x)] + [(x, s) for s in scalars] + [(s, x) for s in scalars]
    for lhs, rhs in pairs:
        with xo.no_grad():
            out = op(lhs, rhs)
        _same(*_both_rules(g, out, lhs, rhs, monkeypatch, op is xo.maximum))
    # only one operand wanted
    y.requires_grad = False
    with xo.no_grad():
        out = op(x, y)
    fast, slow = _both_rules(g, out, x, y, monkeypatch, op is xo.maximum)
    assert fast[1] is None
    _same(fast, slow)


@pytest.mark.parametrize("op", [xo.maximum, xo.minimum])
def test_bits_match_composite_rule_threaded(op, monkeypatch):
    """Above the kernels' parallel threshold (the prange variant)."""
    rng = np.random.default_rng(11)
    n = 70_001
    x = xo.tensor(_data(rng, n, np.float32), "f32", requires_grad=True)
    y = xo.tensor(_data(rng, n, np.float32), "f32", requires_grad=True)
    g = xo.tensor(_data(rng, n, np.float32), "f32")
    for lhs, rhs in ((x, y), (x, 0.0), (-0.0, x), (x, np.nan)):
        with xo.no_grad():
            out = op(lhs, rhs)
        _same(*_both_rules(g, out, lhs, rhs, monkeypatch, op is xo.maximum))


def test_values_pinned():
    """g to the operand equal to the result, g * 0.5 to each on a tie (+0 vs -0 too),
    nothing from a NaN result; the 0.0 scalar of a relu gets no array."""
    x = xo.tensor([3.0, -1.0, 0.0, -0.0, np.nan, 2.0, 5.0], "f32", requires_grad=True)
    y = xo.tensor([1.0, 4.0, -0.0, 0.0, 1.0, np.nan, 5.0], "f32", requires_grad=True)
    gx, gy = xo.vjp(xo.maximum, x, y)[1](xo.tensor([2.0] * 7, "f32"))
    np.testing.assert_array_equal(gx.numpy(), [2, 0, 1, 1, 0, 0, 1])
    np.testing.assert_array_equal(gy.numpy(), [0, 2, 1, 1, 0, 0, 1])
    (gr,) = xo.vjp(lambda t: xo.maximum(t, 0.0), x)[1](xo.tensor([3.0] * 7, "f32"))
    np.testing.assert_array_equal(gr.numpy(), [3, 0, 1.5, 1.5, 0, 3, 3])
    assert not np.signbit(gr.numpy()).any()  # +0 where nothing flows, as select's zero


def test_engine_takes_one_pass(monkeypatch):
    """A backward pass (no create_graph) on f32 runs the kernel once per wanted operand;
    create_graph and bf16 run the composite rule. A weak scalar takes the kernel that
    reads g and the operand only."""
    calls = []
    for name in ("extremum_grad", "extremum_grad_weak"):
        kernel = getattr(A.K, name)
        monkeypatch.setattr(A.K, name, lambda *a, k=kernel: calls.append(1) or k(*a))
    x = xo.tensor(np.linspace(-2, 2, 12).reshape(3, 4), "f32", requires_grad=True)
    xo.maximum(x, 0.0).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(x.grad.numpy(), (np.linspace(-2, 2, 12) > 0).reshape(3, 4))
    g = xo.grad(lambda t: xo.minimum(t, 0.5).sum())(xo.tensor(x.numpy()))  # a plain primal
    assert len(calls) == 2
    np.testing.assert_array_equal(g.numpy(), (np.linspace(-2, 2, 12) < 0.5).reshape(3, 4))
    xo.grad(lambda t: xo.minimum(t, 0.5).sum())(x)  # x requires grad: a nested graph
    assert len(calls) == 2
    xo.maximum(xo.tensor([1.0, -1.0], "bf16", requires_grad=True), 0.0).sum().backward()
    assert len(calls) == 2
    x.grad = None
    xo.maximum(x, 0.0).sum().backward(create_graph=True)
    assert len(calls) == 2
    np.testing.assert_array_equal(x.grad.numpy(), (np.linspace(-2, 2, 12) > 0).reshape(3, 4))


def test_finite_differences_and_second_order():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(9), rng.standard_normal(9)
    b[np.abs(a - b) < 0.1] += 0.5  # away from the kink
    for op in (xo.maximum, xo.minimum):
        check_grads(op, [a, b])
        check_grads(lambda t, op=op: xo.multiply(op(t, 0.25), op(t, 0.25)), [a], order=2)
