"""The fused cross-entropy on CUDA tensors (xops/kernels/cuda/losses.py): forward and
gradient, one launch each, against the CPU's fused op (float64 inside, rounded once: f32
within 1 ulp, f64 within the float64 sums' rounding order), the composite of ops
(log_softmax + nll_loss) and finite differences; every reduction, f32 and f64 logits,
several label types; the multi-block paths (long rows, many rows); the label range check
(the ValueError, read once per label array) and out-of-range labels reaching the kernel
(NaN rows, never a read outside the row)."""

import gc

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo
from xops import device as _device
from xops.kernels.cuda import losses
from xops.nn import functional as F

pytestmark = needs_cuda

REDUCTIONS = ("mean", "sum", "none")


def _data(n, c, dt, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c)) * 3).astype(dt), rng.integers(0, c, n)


def _loss_and_grad(x, y, reduction, w, device):
    """The loss (as a NumPy array) and d/dx of the loss weighted by ``w`` ('none': a
    scalar from the per-item losses, so that the cotangent is a vector)."""
    t = xo.tensor(x, device=device)
    t.requires_grad = True
    loss = F.cross_entropy(t, xo.tensor(y, device=device), reduction)
    assert loss._node.op == "softmax_cross_entropy" and loss.device == device
    if reduction == "none":
        s = xo.reduce(loss * xo.tensor(w.astype(x.dtype), device=device), 0.0, [0], xo.add)
    else:
        s = loss * 0.75  # (a cotangent other than 1)
    s.backward()
    assert t.grad.device == device and t.grad.dtype == t.dtype
    return loss.to("cpu").numpy(), t.grad.to("cpu").numpy()


def _close(a, b, dt):
    """f32: within 1 ulp (float64 inside, rounded once on both sides); f64: the float64
    sums' order (and exp / log within 1 ulp) moves results by a few float64 ulp of the
    terms, which cancel in lse - z and softmax - 1: absolute 1e-14 of magnitude-1 terms."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == np.float32:
        np.testing.assert_array_max_ulp(a, b, maxulp=1)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_forward_and_gradient_equal_the_cpu_fused_op(dt, reduction):
    x, y = _data(5, 7, dt)
    w = np.linspace(0.5, 2.0, 5)
    dev = _loss_and_grad(x, y.astype(np.int32), reduction, w, "cuda:0")
    ref = _loss_and_grad(x, y.astype(np.int32), reduction, w, "cpu")
    _close(dev[0], ref[0], dt)
    _close(dev[1], ref[1], dt)


@pytest.mark.parametrize("ldt", [np.int64, np.uint8, np.int16, np.uint32])
def test_label_types(ldt):
    x, y = _data(4, 6, np.float32, seed=1)
    dev = _loss_and_grad(x, y.astype(ldt), "mean", None, "cuda:0")
    ref = _loss_and_grad(x, y.astype(ldt), "mean", None, "cpu")
    _close(dev[0], ref[0], np.float32)
    _close(dev[1], ref[1], np.float32)


@pytest.mark.parametrize(
    "n, c, reduction, small",
    [
        (2, 300, "mean", False),  # rows longer than a block: several columns per thread
        # more rows than one block adds (block partials, a second launch) and than the
        # launch has blocks (each block takes every MAX_BLOCKS-th row), shrunk to a few
        (7, 3, "mean", True),
        (7, 3, "sum", True),
        (7, 3, "none", True),
    ],
)
def test_long_rows_and_many_rows(n, c, reduction, small, monkeypatch):
    if small:
        monkeypatch.setattr(losses, "ONE_BLOCK", 2)
        monkeypatch.setattr(losses, "ROWS", 2)
        monkeypatch.setattr(losses, "MAX_BLOCKS", 3)
    x, y = _data(n, c, np.float64, seed=2)
    w = np.linspace(-1.0, 1.0, n)
    dev = _loss_and_grad(x, y, reduction, w, "cuda:0")
    ref = _loss_and_grad(x, y, reduction, w, "cpu")
    _close(dev[0], ref[0], np.float64)
    _close(dev[1], ref[1], np.float64)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_equal_to_the_composite_of_ops(dt, reduction):
    # the path other shapes take: log_softmax + nll_loss, rounded per op on the CPU
    x, y = _data(4, 5, dt, seed=3)
    w = np.linspace(0.5, 1.5, 4)
    dev = _loss_and_grad(x, y, reduction, w, "cuda:0")
    t = xo.tensor(x)
    t.requires_grad = True
    loss = F.nll_loss(F.log_softmax(t, axis=1), xo.tensor(y), reduction)
    assert loss._node.op != "softmax_cross_entropy"
    s = xo.reduce(loss * xo.tensor(w.astype(dt)), 0.0, [0], xo.add) if loss.ndim else loss * 0.75
    s.backward()
    tol = 1e-6 if dt == np.float32 else 1e-14
    np.testing.assert_allclose(dev[0], loss.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(dev[1], t.grad.numpy(), rtol=tol, atol=tol)


def test_gradient_by_finite_differences():
    x, y = _data(2, 3, np.float64, seed=4)
    yc = cu(y)

    def loss(v):
        return F.cross_entropy(cu(v), yc).item()

    t = cu(x)
    t.requires_grad = True
    F.cross_entropy(t, yc).backward()
    h, num = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        num[i] = (loss(x + e) - loss(x - e)) / (2 * h)
    np.testing.assert_allclose(t.grad.to("cpu").numpy(), num, atol=1e-8)


def test_nan_and_inf_logits_give_nan_rows_as_the_cpu():
    x = np.array([[np.nan, 0.0, 1.0], [np.inf, 0.0, 0.0], [-np.inf] * 3, [1.0, 2.0, -np.inf]])
    y = np.array([1, 0, 2, 1])
    dev = _loss_and_grad(x.astype(np.float32), y, "none", np.ones(4), "cuda:0")
    ref = _loss_and_grad(x.astype(np.float32), y, "none", np.ones(4), "cpu")
    for a, b in zip(dev, ref):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_max_ulp(a[3], b[3], maxulp=1)  # (-inf: exp gives 0)


def test_no_rows():
    x = np.zeros((0, 4), np.float32)
    for reduction in REDUCTIONS:
        a = F.cross_entropy(cu(x), cu(np.zeros(0, np.int32)), reduction)
        b = F.cross_entropy(xo.tensor(x), xo.tensor(np.zeros(0, np.int32)), reduction)
        assert a._node is None or a._node.op == "softmax_cross_entropy"
        np.testing.assert_array_equal(a.to("cpu").numpy(), b.numpy())  # mean: NaN, sum: 0


def test_one_launch_each_way_and_one_label_read(monkeypatch):
    calls = []
    fwd = F._softmax_xent.kernels["cuda"]
    bwd = _device._updates["cuda", "softmax_cross_entropy_grad"]
    monkeypatch.setitem(F._softmax_xent.kernels, "cuda", lambda *a: calls.append("f") or fwd(*a))
    monkeypatch.setitem(
        _device._updates,
        ("cuda", "softmax_cross_entropy_grad"),
        lambda *a: calls.append("b") or bwd(*a),
    )
    reads = []
    numpy = xo.Tensor.numpy
    monkeypatch.setattr(xo.Tensor, "numpy", lambda self: reads.append(1) or numpy(self))
    x, y = _data(3, 4, np.float32, seed=5)
    yc = cu(y)
    t = cu(x)
    t.requires_grad = True
    for _ in range(3):  # a training loop passing the same labels
        F.cross_entropy(t, yc).backward()
    assert calls == ["f", "b"] * 3
    assert len(reads) == 1  # the range check copied the labels once
    key = id(yc._value)
    assert F._RANGES[key][1:] == (y.min(), y.max())
    del yc
    gc.collect()
    assert key not in F._RANGES  # (the entry goes with its array)


@pytest.mark.parametrize("bad", [-1, 4])
def test_labels_out_of_range_raise_the_cpu_error(bad):
    x, y = _data(3, 4, np.float32, seed=6)
    y[1] = bad
    msg = (
        r"cross_entropy: labels must be class indices in \[0, 4\) or ignore_index -100, "
        r"got values in "
    )
    for device in ("cpu", "cuda"):
        with pytest.raises(ValueError, match=msg + rf"\[{y.min()}, {y.max()}\]"):
            F.cross_entropy(xo.tensor(x, device=device), xo.tensor(y, device=device))
    yc = cu(y)
    for _ in range(2):  # (the second time from the kept range)
        with pytest.raises(ValueError, match=msg):
            F.cross_entropy(cu(x), yc)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_labels_out_of_range_in_the_kernel_give_nan_rows(reduction):
    # the op itself, past the range check: the rows with a bad label are NaN and nothing
    # outside a row is read (labels far out of range, negative and past C)
    x, _ = _data(4, 3, np.float64, seed=7)
    y = np.array([0, -5, 2, 1 << 40])
    good = np.array([True, False, True, False])
    out = F._softmax_xent(cu(x), cu(y), reduction).to("cpu").numpy()
    ref = F._softmax_xent(xo.tensor(x[good]), xo.tensor(y[good]), "none").numpy()
    if reduction == "none":
        assert np.isnan(out[~good]).all()
        _close(out[good], ref, np.float64)
    else:
        assert np.isnan(out)
    grad = _device._updates["cuda", "softmax_cross_entropy_grad"]
    g = cu(np.ones(4)) if reduction == "none" else cu(np.array(1.0))
    d = grad(g, cu(x), cu(y), reduction).to("cpu").numpy()
    assert np.isnan(d[~good]).all() and np.isfinite(d[good]).all()


def test_what_the_kernel_does_not_take():
    x, y = _data(3, 4, np.float32)
    with pytest.raises(xo.SpecError, match=r"softmax_cross_entropy \(device\).*logits"):
        F._softmax_xent(cu(x), cu(y), "max")
    with pytest.raises(xo.SpecError, match=r"softmax_cross_entropy \(device\)"):
        F._softmax_xent(cu(x), cu(y.astype(np.float32)), "mean")
    grad = _device._updates["cuda", "softmax_cross_entropy_grad"]
    with pytest.raises(xo.SpecError, match="cotangent"):
        grad(cu(np.ones(3, np.float32)), cu(x), cu(y), "mean")  # (a vector for a mean)
    # outside the fused op: i4 labels (stored as bit patterns), label smoothing
    t = cu(x)
    assert not F._fusable(t, cu(y).to("cpu"), "mean")
    assert not F._fusable(t, xo.convert(cu(y), "i4"), "mean")
    assert F._fusable(t, cu(y), "mean")


def test_second_order_records_the_gradient_as_ops():
    # create_graph: the rule writes the gradient with ops (on the device), so a gradient
    # of the gradient exists and equals the CPU's
    z = np.random.default_rng(8).standard_normal((2, 3))

    def gradient_norm(device):
        y = xo.tensor(np.array([0, 2]), device=device)

        def f(t):
            g = xo.grad(lambda u: F.cross_entropy(u, y, "mean"))(t)
            return xo.reduce(xo.multiply(g, g), 0.0, [0, 1], xo.add)

        return xo.grad(f)(xo.tensor(z, "f64", device=device)).to("cpu").numpy()

    ref = gradient_norm("cpu")
    assert np.abs(ref).max() > 1e-3
    np.testing.assert_allclose(gradient_norm("cuda"), ref, rtol=1e-12, atol=1e-15)
