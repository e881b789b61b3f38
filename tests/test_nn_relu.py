"""``F.relu`` as one recorded op (``nn.functional.relu``): the values and gradient of the
composite it replaces (``select(compare(x, 0, LE), 0, x)`` and that select's rule), bit
for bit, for every element type the composite accepts."""

import numpy as np
import pytest

import xops as xo
from xops.nn import functional as F
from gradcheck import check_grads

SPECIAL = [-2.5, -0.0, 0.0, 1.5, np.nan, -np.inf, np.inf, 1e-40, -1e-40, 3.0, -7.0, 0.25]


def _bits(t):
    a = np.ascontiguousarray(t.numpy())
    return a.view(f"u{a.dtype.itemsize}")


def _old_grad(x, g):
    """The gradient of the old composite at x for cotangent g (its select rule)."""
    pred = xo.compare(x, 0, "LE")
    return xo.select(pred, xo.tensor(np.zeros(g.shape, g.dtype.compute), g.dtype), g)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16", "f16", "f8E4M3FN", "f8E5M2"])
def test_relu_floats_are_the_composite_bit_for_bit(dt):
    x = xo.tensor(np.array(SPECIAL, np.float64), dt)
    y = F.relu(x)
    assert _bits(y).tolist() == _bits(F._relu_ops(x)).tolist()
    assert y.dtype == x.dtype and y.shape == x.shape
    v = y.numpy().astype(np.float64)
    xs = x.numpy().astype(np.float64)  # (f8E4M3FN has no inf: -inf became NaN)
    want = np.where(xs <= 0, 0.0, xs)
    np.testing.assert_array_equal(v, want)
    assert np.isnan(v[4]) and not np.signbit(v[1])  # NaN passes, -0.0 gives +0.0


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
def test_relu_and_its_gradient_past_the_select_kernel_size_bit_for_bit(dt):
    # from 2048 elements on the host relu runs select's raw-bits kernel: C-contiguous,
    # transposed (another memory order) and a transposed x with a C-ordered g
    rng = np.random.default_rng(1)
    base = np.concatenate([SPECIAL * 200, rng.standard_normal(2400 - 12 * 200)])
    square = xo.tensor(base.reshape(40, 60), dt)
    for x in (square, xo.transpose(square, [1, 0])):  # (a transposed view)
        x.requires_grad_()
        xv = x.numpy()
        assert x._value.flags.c_contiguous == (x is square)
        y = F.relu(x)
        assert _bits(y).tolist() == _bits(F._relu_ops(x.detach())).tolist()
        g = xo.tensor(rng.standard_normal(xv.shape) * (rng.random(xv.shape) > 0.3), dt)
        y.backward(g)
        assert _bits(x.grad).tolist() == _bits(_old_grad(x.detach(), g)).tolist()


def test_relu_gradient_of_a_sum_past_the_select_kernel_size():
    # sum's cotangent reaches relu broadcast from one element (every stride 0)
    x = np.random.default_rng(2).standard_normal((50, 60)).astype(np.float32)
    x[0, :3] = [0.0, -0.0, np.nan]
    g = xo.grad(lambda t: F.sum(F.relu(t)))(xo.tensor(x))
    np.testing.assert_array_equal(g.numpy(), np.where(x <= 0, 0.0, 1.0).astype(np.float32))
    g = xo.grad(lambda t: F.mean(F.relu(t)))(xo.tensor(x))
    assert (
        _bits(g).tolist() == _bits(xo.grad(lambda t: F.mean(F._relu_ops(t)))(xo.tensor(x))).tolist()
    )


@pytest.mark.parametrize("dt", ["i8", "i32", "i64", "i4", "ui8", "ui32"])
def test_relu_integers_are_the_composite(dt):
    vals = [0, 3, 7, 1, 5] if dt.startswith("ui") else [-8, -1, 0, 1, 7]
    x = xo.tensor(vals, dt)
    y = F.relu(x)
    assert y.dtype == x.dtype and y._node is None
    np.testing.assert_array_equal(y.numpy(), F._relu_ops(x).numpy())
    np.testing.assert_array_equal(y.numpy().astype(np.int64), np.maximum(vals, 0))


def test_relu_records_one_node_and_other_types_take_the_composite():
    x = xo.tensor([[-1.0, 2.0]], requires_grad=True)
    y = F.relu(x)
    assert y._node.op == "relu" and y._node.args[0] is x
    for t in (xo.tensor([True, False]), xo.tensor([-1 + 1j, 2 + 0j], "c64")):
        y = F.relu(t)
        assert y.numpy().tolist() == F._relu_ops(t).numpy().tolist()
    np.testing.assert_array_equal(np.asarray(F.relu(np.array([-1.0, 2.0]))), [0.0, 2.0])
    assert F.relu(xo.tensor(-3.0)).shape == () and F.relu(xo.tensor(-3.0)).item() == 0.0
    assert F.relu(xo.tensor(np.zeros((0, 3), np.float32))).shape == (0, 3)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16", "f16"])
def test_relu_gradient_is_the_old_select_rule_bit_for_bit(dt):
    xv = np.array(SPECIAL, np.float64)
    gv = np.array([1.0, 2.0, -3.0, -0.0, np.nan, 5.0, -0.0, 6.0, 7.0, np.inf, 8.0, -9.0])
    x, g = xo.tensor(xv, dt, requires_grad=True), xo.tensor(gv, dt)
    got = xo.grad(lambda t: F.sum(xo.multiply(F.relu(t), g)))(x)
    # (multiply's rule hands relu's rule the cotangent g itself)
    want = _old_grad(x.detach(), g)
    assert _bits(got).tolist() == _bits(want).tolist()
    gn = got.numpy().astype(np.float64)
    assert gn[1] == 0 and gn[2] == 0 and not np.signbit(gn[2])  # x = -0.0, 0.0: 0
    assert gn[4] != gn[4]  # x NaN passes g (NaN here)
    assert gn[3] == 0 and np.signbit(gn[3])  # x > 0 passes g = -0.0 unchanged
    assert gn[0] == 0 and gn[5] == 0  # x < 0, x = -inf: 0 (g = nan at x NaN aside)


def test_relu_gradient_with_nan_cotangent_where_x_is_negative_is_zero():
    x = xo.tensor([-1.0, 2.0, 0.0], requires_grad=True)
    y = F.relu(x)
    y.backward(xo.tensor([np.nan, np.nan, np.inf]))
    assert x.grad.numpy().tolist()[0] == 0.0 and np.isnan(x.grad.numpy()[1])
    assert x.grad.numpy()[2] == 0.0


def test_relu_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (3, 4))
    x[np.abs(x) < 0.05] = 0.5  # away from the kink
    check_grads(F.relu, [x], order=2)


def test_relu_create_graph_records_the_gradient():
    x = xo.tensor([-1.0, 0.0, 2.0, 3.0], "f64", requires_grad=True)
    F.sum(xo.multiply(F.relu(x), x)).backward(create_graph=True)
    gx = x.grad  # d/dx relu(x) x = 2x where x > 0: 0, 0, 4, 6
    np.testing.assert_array_equal(gx.numpy(), [0.0, 0.0, 4.0, 6.0])
    assert gx.requires_grad
    x.grad = None
    F.sum(gx).backward()  # its gradient again: 2 where x > 0
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 2.0, 2.0])


@pytest.mark.parametrize("dt, word", [(np.float32, np.uint32), (np.float64, np.uint64)])
def test_relu_one_pass_kernel_keeps_nan_payloads_in_any_shared_layout(dt, word):
    # from 2048 elements f32/f64 relu and its gradient run one fused pass in the arrays'
    # shared memory order: NaN payloads (quiet and signalling, either sign) copied as bits
    rng = np.random.default_rng(5)
    n = 64 * 48
    bits = rng.standard_normal(n).astype(dt).view(word)
    high = word(1) << word(8 * np.dtype(dt).itemsize - 1)
    exp_all = np.array(np.finfo(dt).max, dt).view(word) | (word(1) << word(np.finfo(dt).nmant))
    nans = [exp_all | word(1), exp_all | word(5), high | exp_all | word(3)]  # signalling, +/-
    bits[:3] = nans
    bits[3:6] = np.array([-0.0, 0.0, -1.0], dt).view(word)
    x = bits.view(dt).reshape(64, 48)
    g = rng.standard_normal((64, 48)).astype(dt)
    g.view(word)[10, :3] = nans
    for xv, gv in ((x, g), (x.T, g.T), (x[:, ::-1], g[:, ::-1]), (x.T, np.ascontiguousarray(g.T))):
        want = np.where(xv <= 0, dt(0), xv).view(word)  # np.where copies payloads
        got = F._zero_where_le0(xv, xv)
        assert got.shape == xv.shape and got.dtype == dt
        np.testing.assert_array_equal(got.view(word), want)
        want_g = np.where(xv <= 0, dt(0), gv).view(word)
        np.testing.assert_array_equal(F._zero_where_le0(xv, gv).view(word), want_g)
    # a transposed x keeps its layout through the one-pass kernel
    assert F._zero_where_le0(x.T, x.T).flags.f_contiguous
