"""CUDA kernels of the batch norm ops (xops/kernels/cuda/normalization.py) against the CPU
ops.

Tiny shapes (the simulator runs a Python thread per CUDA thread; a per-feature block has
32 threads for features of up to 128 elements, 64 up to 256). Both devices compute in
float64 and round once; they differ only in the order of the float64 sums and in the
CPU's f32 copies of per-feature coefficients for short runs, so results agree within
rtol 1e-5 (f32) / 1e-12 (f64) relative to the largest magnitude of each result. Error
paths give the CPU's message, label included. A tiny nn.BatchNorm2d trains (forward,
backward, running statistics) and evaluates on the device as on the CPU.
"""

import numpy as np
import pytest

import xops as xo
from cuda_support import cu, needs_cuda
from xops import nn

pytestmark = needs_cuda

_rng = np.random.default_rng(4)
_TOL = {"f32": 1e-5, "f64": 1e-12}


def _close(dev, ref):
    """Same type and shape; within the module's tolerance, relative to ref's largest
    finite magnitude (NaN where ref has NaN)."""
    assert dev.device == "cuda:0" and ref.device == "cpu"
    a, b = dev.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    tol = _TOL[ref.dtype.name]
    big = np.abs(b[np.isfinite(b)]).max(initial=0.0)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * big)


def _all_close(devs, refs):
    assert type(devs) is type(refs) and len(devs) == len(refs)
    for d, r in zip(devs, refs):
        _close(d, r)


def _data(shape, fi, dt):
    """(operand, scale, offset, grad_output) as CPU tensors of type dt; the operand has
    a different mean and spread per feature."""
    c = shape[fi]
    bshape = [1] * len(shape)
    bshape[fi] = c
    x = _rng.standard_normal(shape) * np.linspace(0.5, 3, c).reshape(bshape)
    x = x + np.arange(c).reshape(bshape) - 1
    arrays = (x, _rng.standard_normal(c), _rng.standard_normal(c), _rng.standard_normal(shape))
    return [xo.tensor(a, dt) for a in arrays]


@pytest.mark.parametrize(
    "dt, shape, fi, eps",
    [
        ("f32", (3, 2, 70), 0, 1e-5),  # 140 elements per feature: 64-thread blocks
        ("f32", (2, 3, 2, 2), 1, 0.25),
        ("f32", (2, 5, 3), 2, 0.0),
        ("f64", (3, 4, 2), 0, 1e-5),  # f64 epsilon: float32(1e-5), as on the CPU
        ("f64", (2, 2, 3, 2), 1, 0.5),
        ("f64", (4, 3), 1, 1e-3),
    ],
)
def test_batch_norm_ops_match_cpu(dt, shape, fi, eps):
    x, s, o, g = _data(shape, fi, dt)
    xd, sd, od, gd = (t.to("cuda") for t in (x, s, o, g))
    ref = xo.batch_norm_training(x, s, o, eps, fi)
    dev = xo.batch_norm_training(xd, sd, od, eps, fi)
    _all_close(dev, ref)
    # inference and grad with the CPU's statistics (the same inputs on both devices)
    m, v = ref[1], ref[2]
    md, vd = m.to("cuda"), v.to("cuda")
    _close(
        xo.batch_norm_inference(xd, sd, od, md, vd, eps, fi),
        xo.batch_norm_inference(x, s, o, m, v, eps, fi),
    )
    _all_close(
        xo.batch_norm_grad(xd, sd, md, vd, gd, eps, fi), xo.batch_norm_grad(x, s, m, v, g, eps, fi)
    )
    # training normalises with its own statistics rounded to the element type, as the
    # spec composes it: equal to inference with them
    _close(dev[0], xo.batch_norm_inference(x, s, o, dev[1].to("cpu"), dev[2].to("cpu"), eps, fi))


def test_ill_conditioned_statistics():
    # |mean| / stddev = 1e6: the statistics agree to float64 rounding (the variance has no
    # E[x^2] - E[x]^2 cancellation on either device); the output within the conditioning
    # bound |scale| * 8 ulp(|mean|) / stddev
    x = xo.tensor(1e4 + _rng.standard_normal((5, 2, 30)) * 1e-2, "f64")
    s, o = xo.tensor([1.0, -2.0], "f64"), xo.tensor([0.5, 0.0], "f64")
    ref = xo.batch_norm_training(x, s, o, 0.0, 1)
    dev = xo.batch_norm_training(x.to("cuda"), s.to("cuda"), o.to("cuda"), 0.0, 1)
    np.testing.assert_allclose(dev[1].numpy(), ref[1].numpy(), rtol=1e-15)
    np.testing.assert_allclose(dev[2].numpy(), ref[2].numpy(), rtol=1e-9)
    bound = 2.0 * 8 * np.spacing(1e4) / np.sqrt(ref[2].numpy().min())
    np.testing.assert_allclose(dev[0].numpy(), ref[0].numpy(), rtol=0, atol=bound)


def test_deterministic_and_keyword_attributes():
    x, s, o, g = (t.to("cuda") for t in _data((2, 3, 4), 1, "f32"))
    a = xo.batch_norm_training(x, s, o, epsilon=1e-3, feature_index=1)
    b = xo.batch_norm_training(x, s, o, 1e-3, 1)
    for u, w in zip(a, b):
        np.testing.assert_array_equal(u.numpy(), w.numpy())
    c = xo.batch_norm_grad(x, s, a[1], a[2], g, 1e-3, feature_index=1)
    d = xo.batch_norm_grad(x, s, a[1], a[2], g, 1e-3, 1)
    for u, w in zip(c, d):
        np.testing.assert_array_equal(u.numpy(), w.numpy())


def test_empty_and_degenerate_shapes():
    # an empty batch: NaN statistics, zero gradient sums; no features: empty vectors;
    # one element per feature: variance 0 (epsilon keeps the output finite)
    for shape, fi in (((0, 3), 1), ((2, 0), 1), ((3,), 0)):
        x, s, o, g = _data(shape, fi, "f64")
        xd, sd, od, gd = (t.to("cuda") for t in (x, s, o, g))
        ref = xo.batch_norm_training(x, s, o, 0.5, fi)
        dev = xo.batch_norm_training(xd, sd, od, 0.5, fi)
        _all_close(dev, ref)
        m, v = ref[1], ref[2]
        _all_close(
            xo.batch_norm_grad(xd, sd, m.to("cuda"), v.to("cuda"), gd, 0.5, fi),
            xo.batch_norm_grad(x, s, m, v, g, 0.5, fi),
        )
    _, mean, var = xo.batch_norm_training(
        cu(np.zeros((0, 2))), cu([1.0, 1.0], "f64"), cu([0.0, 0.0], "f64"), 0, 1
    )
    assert np.isnan(mean.numpy()).all() and np.isnan(var.numpy()).all()


def _same_error(fn, cpu_args, dev_args):
    with pytest.raises(xo.SpecError) as cpu_err:
        fn(*cpu_args)
    with pytest.raises(xo.SpecError) as dev_err:
        fn(*dev_args)
    assert str(dev_err.value) == str(cpu_err.value)
    return str(dev_err.value)


def test_errors_match_cpu():
    x, s, o, g = _data((2, 3), 1, "f32")
    m, v = s, o
    tr, inf, gr = xo.batch_norm_training, xo.batch_norm_inference, xo.batch_norm_grad
    s2 = xo.tensor([1.0, 2.0])
    s64 = xo.tensor([1.0, 2.0, 3.0], "f64")
    g_bad = xo.tensor(np.ones((3, 2), np.float32))
    cases = [
        (tr, (x, s, o, 1e-3, 2), "batch_norm_training (C1)"),
        (tr, (x, s2, o, 1e-3, 1), "batch_norm_training (C3)"),
        (tr, (x, s, s2, 1e-3, 1), "batch_norm_training (C4)"),
        (tr, (x, s64, o, 1e-3, 1), "batch_norm_training (C2)"),
        (tr, (x, s, o, "small", 1), "batch_norm_training (I4)"),
        (inf, (x, s, o, m, s2, 1e-3, 1), "batch_norm_inference (C6)"),
        (inf, (x, s, o, m, v, 1e-3, -1), "batch_norm_inference (C1)"),
        (gr, (x, s, m, v, g_bad, 1e-3, 1), "batch_norm_grad (C3)"),
        (gr, (x, s, m, s2, g, 1e-3, 1), "batch_norm_grad (C4)"),
        (gr, (x, s, m, v, xo.tensor(np.ones((2, 3), np.int32)), 1e-3, 1), "batch_norm_grad (I5)"),
    ]
    for fn, args, label in cases:
        dev_args = [a.to("cuda") if isinstance(a, xo.Tensor) else a for a in args]
        assert _same_error(fn, args, dev_args).startswith(label)


def test_host_operand():
    # (every float type has the kernels: f4, f6 and f8E8M0FNU since session 22, see
    # tests/test_cuda_small_floats.py)
    x, s, o, g = (t.to("cuda") for t in _data((2, 3), 1, "f32"))
    with pytest.raises(xo.SpecError, match=r"batch_norm_grad \(device\).*different devices"):
        xo.batch_norm_grad(x, s, s, o, np.ones((2, 3), np.float32), 1e-3, 1)


def test_gradients_through_the_tape():
    # training: the output's cotangent through batch_norm_grad, batch_mean's and
    # batch_var's through their own terms; inference: all five inputs (its rule's sums
    # run on the device)
    def training(x, s, o):
        out, m, v = xo.batch_norm_training(x, s, o, 1e-3, 1)
        return xo.reduce(out * out * out, 0.0, [0, 1, 2], xo.add) + xo.reduce(
            m * v, 0.0, [0], xo.add
        )

    def inference(x, s, o, m, v):
        y = xo.batch_norm_inference(x, s, o, m, v, 1e-3, 1)
        return xo.reduce(y * y * y, 0.0, [0, 1, 2], xo.add)

    data = [_rng.standard_normal((2, 2, 3)), [1.5, -0.5], [0.1, 0.2], [0.1, 0.3], [1.1, 0.7]]
    runs = []
    for dev in ("cpu", "cuda"):
        x, s, o, m, v = (xo.tensor(a, "f64", device=dev) for a in data)
        got = xo.grad(training, argnums=(0, 1, 2))(x, s, o)
        got += xo.grad(inference, argnums=(0, 1, 2, 3, 4))(x, s, o, m, v)
        runs.append(got)
    for ref, d in zip(*runs):
        _close(d, ref)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_2d_train_and_eval(affine):
    x = _rng.standard_normal((2, 3, 2, 2)).astype(np.float32) * 2 + 1
    w = _rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    runs = []
    for dev in ("cpu", "cuda"):
        bn = nn.BatchNorm2d(3, affine=affine)
        if affine:
            nn.assign_(bn.weight, xo.tensor([1.5, -0.5, 2.0]))
            nn.assign_(bn.bias, xo.tensor([0.25, 0.0, -1.0]))
        bn.to(dev)
        X = xo.tensor(x, device=dev).requires_grad_()
        y = bn(X)
        (y * xo.tensor(w, device=dev)).sum().backward()
        got = [y, X.grad, bn.running_mean, bn.running_var]
        if affine:
            got += [bn.weight.grad, bn.bias.grad]
        bn.eval()
        got.append(bn(xo.tensor(x[:1] * 0.5, device=dev)))
        runs.append(got)
    for ref, d in zip(*runs):
        assert d.device == "cuda:0"
        _close(d, ref)


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("shape, fi", [((3, 4, 5), 1), ((6, 2), 0), ((2, 3, 0), 1), ((4, 3), 1)])
def test_one_kernel_paths_give_the_two_kernel_bits(dt, shape, fi, monkeypatch):
    """Features of at most FUSED_N elements take one launch per op (a block per feature
    also writes the elements): bit for bit the two-kernel paths' results, which larger
    features take (forced here with FUSED_N = 0)."""
    from xops.kernels.cuda import normalization as N

    c = shape[fi]
    x = _rng.standard_normal(shape) * 2 + 0.5
    g = _rng.standard_normal(shape)
    scale, offset = _rng.uniform(0.5, 2, c), _rng.standard_normal(c)
    args = [cu(v, dt) for v in (x, scale, offset)]

    def run():
        out = xo.batch_norm_training(*args, 1e-3, fi)
        grads = xo.batch_norm_grad(args[0], args[1], out[1], out[2], cu(g, dt), 1e-3, fi)
        return [t.numpy() for t in (*out, *grads)]

    fused = run()
    monkeypatch.setattr(N, "FUSED_N", 0)
    split = run()
    for a, b in zip(fused, split):
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    ref = xo.batch_norm_training(*(xo.tensor(v, dt) for v in (x, scale, offset)), 1e-3, fi)
    for a, r in zip(fused[:3], ref):
        np.testing.assert_allclose(a, r.numpy(), rtol=_TOL[dt], atol=_TOL[dt] * 4)
