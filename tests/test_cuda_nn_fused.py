"""The fused CUDA kernels of xops.nn.functional (xops/kernels/cuda/nn_fused.py): relu
forward and backward, and BatchNorm's running statistics, each bit for bit equal to the
CPU and to the op composite they replace (run on the device)."""

import numpy as np
import pytest

import xops as xo
from cuda_support import cu, needs_cuda
from xops import device as _device
from xops.nn import functional as F

pytestmark = needs_cuda

SPECIAL = [-2.5, -0.0, 0.0, 1.5, np.nan, -np.inf, np.inf, 1e-40, -1e-40, 3.0, -7.0, 0.25]
G = [1.0, 2.0, -3.0, -0.0, np.nan, 5.0, -0.0, 6.0, 7.0, np.inf, 8.0, -9.0]


def _bits(t):
    a = np.ascontiguousarray(t.numpy())
    return a.view(f"u{a.dtype.itemsize}").tolist()


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_relu_is_one_kernel_and_the_composite_bit_for_bit(dt):
    x = np.array(SPECIAL, np.float64).reshape(3, 4)
    d = F.relu(cu(x, dt))
    assert d.device == "cuda:0" and d.dtype == dt and d.shape == (3, 4)
    assert _bits(d) == _bits(F.relu(xo.tensor(x, dt)))  # the CPU
    assert _bits(d) == _bits(F._relu_ops(cu(x, dt)))  # the composite, on the device
    assert F.relu(cu(-1.0, dt)).item() == 0.0  # 0-d
    assert F.relu(cu(np.zeros((0, 2)), dt)).shape == (0, 2)  # empty: no launch
    y = F.relu(xo.tensor(x, dt, device="cuda", requires_grad=True))
    assert y._node.op == "relu" and y.device == "cuda:0"


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_relu_gradient_kernel_is_the_select_rule_bit_for_bit(dt):
    x, g = np.array(SPECIAL), np.array(G)
    grads = []
    for dev in ("cuda", "cpu"):
        t = xo.tensor(x, dt, device=dev, requires_grad=True)
        F.relu(t).backward(xo.tensor(g, dt, device=dev))
        grads.append(t.grad)
    assert grads[0].device == "cuda:0" and _bits(grads[0]) == _bits(grads[1])
    pred = xo.compare(cu(x, dt), 0, "LE")  # the old rule: select(x <= 0, 0, g)
    assert _bits(grads[0]) == _bits(xo.select(pred, cu(np.zeros(12), dt), cu(g, dt)))
    gn = grads[0].numpy()
    assert gn[1] == gn[2] == 0 and np.isnan(gn[4]) and np.signbit(gn[3]) and gn[0] == 0


def test_relu_create_graph_and_other_types_on_the_device():
    x = xo.tensor([-1.0, 0.0, 2.0, 3.0], "f64", device="cuda", requires_grad=True)
    F.sum(xo.multiply(F.relu(x), x)).backward(create_graph=True)
    gx = x.grad  # 2x where x > 0, recorded
    assert gx.requires_grad and gx.numpy().tolist() == [0.0, 0.0, 4.0, 6.0]
    x.grad = None
    F.sum(gx).backward()
    assert x.grad.device == "cuda:0" and x.grad.numpy().tolist() == [0.0, 0.0, 2.0, 2.0]
    # bf16 and integers have no relu kernel: the composite (compare + select) runs
    for dt in ("bf16", "i32"):
        d = F.relu(cu([-2, 0, 3], dt))
        assert d.device == "cuda:0" and d._node is None
        assert _bits(d) == _bits(F.relu(xo.tensor([-2, 0, 3], dt)))
    from xops.kernels.cuda import nn_fused

    with pytest.raises(xo.SpecError, match=r"relu.*bf16\[3\]"):
        nn_fused.relu(cu([1, 2, 3], "bf16"))
    with pytest.raises(xo.SpecError, match="relu.*different devices"):
        nn_fused.relu(xo.tensor([1.0]))


def _batch(dt, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((3, 4, 2)) * 3 + 1.7).astype(np.float64)
    rm = rng.standard_normal(4) * 0.3
    rv = rng.uniform(0.5, 2.0, 4)
    return x, rm, rv


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("which", ["both", "mean", "var"])
def test_running_statistics_are_one_launch_and_the_composite_bit_for_bit(dt, which, monkeypatch):
    x, rm, rv = _batch(dt)
    calls = []
    fused = _device._updates["cuda", "batch_norm_running"]
    monkeypatch.setitem(
        _device._updates, ("cuda", "batch_norm_running"), lambda *a: calls.append(1) or fused(*a)
    )
    m, n = 0.1, 3 * 2
    rmean = None if which == "var" else cu(rm, dt)
    rvar = None if which == "mean" else cu(rv, dt)
    keep = [t for t in (rmean, rvar) if t is not None]
    out = F.batch_norm(cu(x, dt), rmean, rvar, training=True, momentum=m)
    assert len(calls) == 1 and all(t.device == "cuda:0" and t.dtype == dt for t in keep)
    # the batch statistics the call used (the device's batch_norm_training, deterministic)
    ones, zeros = cu(np.ones(4), dt), cu(np.zeros(4), dt)
    _, bm, bv = xo.batch_norm_training(cu(x, dt), ones, zeros, 1e-5, 1)
    refs = {"mean": (rm, bm, None), "var": (rv, bv, n / (n - 1))}
    for name, t in zip(("mean", "var"), (rmean, rvar)):
        if t is None:
            continue
        old, batch, scale = refs[name]
        op_path = F._running_update(cu(old, dt), batch, m, scale)  # ops on the device
        host = F._running_update(xo.tensor(old, dt), batch.to("cpu"), m, scale)  # NumPy
        assert op_path.device == "cuda:0" and _bits(t) == _bits(op_path) == _bits(host)
    np.testing.assert_allclose(
        out.numpy(), F.batch_norm(xo.tensor(x, dt), training=True).numpy(), rtol=1e-5, atol=1e-5
    )


def test_running_statistics_other_types_take_the_ops():
    x, rm, rv = _batch("f32", seed=1)
    for dt in ("bf16", "f16"):  # no fused kernel: the op composite, as on the CPU
        rmean, rvar = cu(rm, dt), cu(rv, dt)
        F.batch_norm(cu(x, dt), rmean, rvar, training=True, momentum=0.25)
        hm, hv = xo.tensor(rm, dt), xo.tensor(rv, dt)
        F.batch_norm(xo.tensor(x, dt), hm, hv, training=True, momentum=0.25)
        assert rmean.device == "cuda:0" and rmean.dtype == dt
        np.testing.assert_allclose(
            rmean.numpy().astype(np.float64), hm.numpy().astype(np.float64), rtol=1e-2
        )
        np.testing.assert_allclose(
            rvar.numpy().astype(np.float64), hv.numpy().astype(np.float64), rtol=1e-2
        )
    # running statistics of another type than the batch's: no fused kernel either (the
    # composite's own error)
    with pytest.raises(xo.SpecError):
        F.batch_norm(cu(x, "f32"), cu(rm, "f64"), cu(rv, "f64"), training=True)


def test_nn_batchnorm_module_trains_its_running_statistics_on_the_device():
    from xops import nn

    x, _, _ = _batch("f32", seed=2)
    bns = [nn.BatchNorm1d(4, momentum=0.3) for _ in range(2)]
    bns[0] = bns[0].to("cuda")
    for _ in range(2):  # the second update starts from the first's result
        bns[0](cu(x, "f32"))
        bns[1](xo.tensor(x, "f32"))
    d, h = bns[0].running_mean, bns[1].running_mean
    assert d.device == "cuda:0"
    np.testing.assert_allclose(d.numpy(), h.numpy(), rtol=1e-6)
    np.testing.assert_allclose(bns[0].running_var.numpy(), bns[1].running_var.numpy(), rtol=1e-6)


@pytest.mark.parametrize("momentum", [0.3, None])
def test_batchnorm_counts_its_batches_in_the_running_statistics_launch(momentum, monkeypatch):
    """``num_batches_tracked`` goes up by one per training forward on the device, as on
    the CPU; with a momentum the running-statistics launch writes it (no add op), with
    ``momentum=None`` (the cumulative average reads it first) an add does."""
    from xops import nn

    x, _, _ = _batch("f32", seed=3)
    counted = []
    fused = _device._updates["cuda", "batch_norm_running"]

    def spy(*a):
        out = fused(*a)
        counted.append(a[-1] is not None and out is not None and len(out) == 3)
        return out

    monkeypatch.setitem(_device._updates, ("cuda", "batch_norm_running"), spy)
    bns = [nn.BatchNorm1d(4, momentum=momentum) for _ in range(2)]
    bns[0] = bns[0].to("cuda")
    for k in range(3):
        bns[0](cu(x * (k + 1), "f32"))
        bns[1](xo.tensor(x * (k + 1), "f32"))
    d, h = bns[0].num_batches_tracked, bns[1].num_batches_tracked
    assert d.device == "cuda:0" and d.dtype == h.dtype == "i64"
    assert int(d.numpy()) == int(h.numpy()) == 3
    assert counted == [momentum is not None] * 3
    np.testing.assert_allclose(bns[0].running_var.numpy(), bns[1].running_var.numpy(), rtol=1e-6)
    bns[0].eval()
    bns[0](cu(x, "f32"))  # (eval mode: not counted)
    assert int(bns[0].num_batches_tracked.numpy()) == 3


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_max_pool_gradient_nan_mask_is_one_kernel_and_the_cpu_gradient(dt, monkeypatch):
    """Max pooling's gradient on the device masks the cotangent of NaN windows (they send
    nothing back, as on the CPU) with one fused kernel; under ``create_graph`` the ops'
    select, which is recorded. Both give the CPU's gradient bit for bit."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 4))
    x[0, 1, 0, 1] = np.nan  # (one NaN window of 2x2)
    x[1, 2, 3, 3] = -0.0
    calls = []
    fused = _device._updates["cuda", "nan_mask"]
    monkeypatch.setitem(
        _device._updates, ("cuda", "nan_mask"), lambda *a: calls.append(1) or fused(*a)
    )

    def loss(t):
        y = F.max_pool2d(t, 2)
        return xo.reduce(y * y, 0.0, [0, 1, 2, 3], xo.add)

    ref = xo.grad(loss)(xo.tensor(x, dt))
    got = xo.grad(loss)(cu(x, dt))
    assert got.device == "cuda:0" and len(calls) == 1
    assert _bits(got) == _bits(ref)
    ref_g = ref.numpy()
    assert ref_g[0, 1, 0, 1] == 0 and np.count_nonzero(ref_g[0, 1, :2, :2]) == 0
    # a gradient of the gradient: the inner backward pass records, so its mask is the
    # ops' select (recorded); the outer pass (first order again) takes the kernel; the
    # select_and_scatter rule's constants live on the device
    del calls[:]
    g2 = xo.grad(lambda t: xo.reduce(xo.grad(loss)(t), 0.0, [0, 1, 2, 3], xo.add))
    want = g2(xo.tensor(x, dt)).numpy()
    np.testing.assert_array_equal(g2(cu(x, dt)).numpy(), want)
    assert len(calls) == 1 and np.count_nonzero(want) == 2 * 3 * 2 * 2 - 1  # (NaN: none)
