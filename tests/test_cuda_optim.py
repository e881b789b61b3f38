"""The fused Adam / AdamW / SGD updates on CUDA tensors (xops/kernels/cuda/optim.py): one
kernel per parameter and step, bit for bit the CPU optimizer's update (the same steps in
the same order, each rounded once to the element type) for f32 and f64, with and without
weight decay (L2 and decoupled), momentum, dampening and Nesterov, over several steps
(the first reads no state); views and other types take the op-by-op update, which gives
the same bits."""

import numpy as np
import pytest
from cuda_support import needs_cuda

import xops as xo
from xops import device as _device
from xops import optim
from xops.tensor import _wrap

pytestmark = needs_cuda


def _params(dt, device):
    rng = np.random.default_rng(7)
    shapes = [(5, 3), (7,), (), (0, 2), (300,)]  # (0-d, empty, more than one block)
    out = []
    for s in shapes:
        p = xo.tensor(rng.normal(size=s).astype(dt), device=device)
        p.requires_grad = True
        out.append(p)
    return out


def _run(opt_type, dt, device, steps=3, **kw):
    ps = _params(dt, device)
    opt = opt_type(ps, **kw)
    rng = np.random.default_rng(8)
    for k in range(steps):
        for p in ps:
            g = (rng.normal(size=p.shape) * 10.0 ** rng.integers(-30, 3)).astype(dt)
            if k == 1 and p.size:
                g.flat[0] = 0.0  # (a zero gradient: sqrt(v) and the moments' decay)
            p.grad = xo.tensor(g, device=device)
        opt.step()
    state = [opt.state[id(p)] for p in ps]
    return [p.to("cpu").numpy() for p in ps], state


@pytest.fixture
def launches(monkeypatch):
    """Records each fused update's calls: whether it ran (True) or declined (False)."""
    calls = []

    def counting(fused, many):
        def counted(*args):
            out = fused(*args)
            calls.extend([out is not None] * (len(args[0]) if many else 1))  # (per parameter)
            return out

        return counted

    for name in ("adam", "adam_many", "sgd"):
        fused = _device._updates["cuda", name]
        monkeypatch.setitem(_device._updates, ("cuda", name), counting(fused, name == "adam_many"))
    return calls


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize(
    "opt_type, kw",
    [
        (optim.Adam, dict(lr=0.05)),
        (optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
        (optim.AdamW, dict(lr=0.02, weight_decay=0.3)),
        (optim.SGD, dict(lr=0.1)),
        (optim.SGD, dict(lr=0.05, momentum=0.9)),
        (optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.1, weight_decay=0.01)),
        (optim.SGD, dict(lr=0.03, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ],
)
def test_fused_updates_equal_the_cpu_update_bit_for_bit(launches, opt_type, kw, dt):
    ref, _ = _run(opt_type, dt, "cpu", **kw)
    dev, state = _run(opt_type, dt, "cuda", **kw)
    assert len(launches) == 3 * 5 and all(launches)  # every parameter, every step, fused
    for a, b in zip(dev, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    if opt_type is optim.SGD:
        assert all(("momentum_buffer" in s) == bool(kw.get("momentum")) for s in state)
        assert all(s["momentum_buffer"].device == "cuda:0" for s in state if s)
    else:
        assert all(s["exp_avg"].device == "cuda:0" and s["step"] == 3 for s in state)


def _one_step(p, g):
    p.requires_grad = True
    opt = optim.Adam([p], lr=0.1, weight_decay=0.5)
    p.grad = g
    opt.step()
    return p.to("cpu").numpy()


def test_views_and_narrow_types_take_the_op_by_op_update(launches):
    x = xo.tensor(np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3))
    g = xo.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))
    # (xops's own CUDA tensors are row-major; a strided device array, as an import could
    # hold, is taken by the op-by-op update)
    strided = xo.tensor(np.arange(1.0, 13.0, dtype=np.float32), device="cuda")._value[::2]
    view = _wrap(strided, x.dtype)
    assert not view._value.is_c_contiguous()
    want = _one_step(xo.tensor(np.arange(1.0, 13.0, 2.0, dtype=np.float32)), g.reshape(6))
    np.testing.assert_array_equal(_one_step(view, g.reshape(6).to("cuda")), want)
    gb = xo.convert(g, "bf16").reshape(2, 3)
    want = _one_step(xo.convert(x, "bf16"), gb)
    got = _one_step(xo.convert(x.to("cuda"), "bf16"), gb.to("cuda"))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    # (the strided one declined, by the multi-tensor update then the single one; bf16
    # never reached either)
    assert launches == [False, False]


def _address(devarr):
    host = getattr(devarr, "_ary", None)  # (the simulator's arrays wrap host memory)
    return host.ctypes.data if host is not None else devarr.device_ctypes_pointer.value


def test_multi_tensor_adam_batches_parameters_and_equals_the_cpu(launches):
    """Adam over 11 parameters of two types and two histories: f32 ones (more than
    ``MANY``: two launches a step) and f64 ones, one of them added to the optimizer's
    group only later (its first step while the others are at their third). Every result
    bit for bit the CPU's; the new tensors of one launch share one device buffer."""
    from xops.kernels.cuda import optim as cuda_optim

    rng = np.random.default_rng(3)
    shapes = [(4, 3), (5,), (), (2, 2, 2), (7,), (3, 1), (6,), (1,), (9,)]

    def build(device):
        ps = [xo.tensor(rng.normal(size=s).astype(np.float32), device=device) for s in shapes]
        ps += [xo.tensor(rng.normal(size=(3,)).astype(np.float64), device=device)]
        late = xo.tensor(rng.normal(size=(2, 3)).astype(np.float64), device=device)
        for p in ps + [late]:
            p.requires_grad = True
        return ps, late

    results = {}
    for device in ("cpu", "cuda"):
        rng = np.random.default_rng(3)
        ps, late = build(device)
        opt = optim.AdamW(ps, lr=0.03, weight_decay=0.2)
        for k in range(3):
            if k == 2:
                opt.add_param_group({"params": [late]})
            for p in ps + ([late] if k == 2 else []):
                p.grad = xo.tensor(rng.normal(size=p.shape).astype(p.numpy().dtype), device=device)
            opt.step()
        results[device] = [p.to("cpu").numpy() for p in ps + [late]]
        if device == "cuda":
            assert opt.state[id(late)]["step"] == 1 and opt.state[id(ps[0])]["step"] == 3
            ptr = [_address(p._value) for p in ps[:2]]
            assert len(shapes) > cuda_optim.MANY
    for a, b in zip(results["cuda"], results["cpu"]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    assert launches and all(launches) and len(launches) == 3 * 10 + 1
    assert ptr[1] - ptr[0] == 12 * 4  # (the first two f32 results: one buffer, in order)


def test_a_mismatched_gradient_updates_no_parameter():
    ps = [xo.tensor(np.ones(3, np.float32), device="cuda") for _ in range(2)]
    for p in ps:
        p.requires_grad = True
    opt = optim.Adam(ps, lr=0.1)
    ps[0].grad = xo.tensor(np.ones(3, np.float32), device="cuda")
    ps[1].grad = xo.tensor(np.ones(4, np.float32), device="cuda")
    with pytest.raises(ValueError, match="does not match its parameter"):
        opt.step()
    assert opt.state.get(id(ps[0]), {}) == {}
    np.testing.assert_array_equal(ps[0].to("cpu").numpy(), np.ones(3, np.float32))


def test_engine_zeros_and_rule_constants_are_shared_on_the_device():
    """The engine's zero cotangents and the rules' 0-d constants are made on the device
    once per shape / value (no kernel or host-to-device copy per backward pass), hold
    the right values, and batch norm's rule recognises the shared zeros."""
    from xops.autodiff import helpers as H
    from xops.ops.normalization import _is_zero

    t = xo.tensor(np.ones((3, 4), np.float32), device="cuda")
    z1, z2, o = H.zeros_like(t), H.zeros_like(t), H.ones_like(t)
    assert z1._value is z2._value and z1 is not z2 and o._value is not z1._value
    assert z1.device == "cuda:0" and z1.shape == (3, 4) and z1.dtype == t.dtype
    np.testing.assert_array_equal(z1.to("cpu").numpy(), np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(o.to("cpu").numpy(), np.ones((3, 4), np.float32))
    assert H.is_shared_zero(z1) and _is_zero(z1) and not _is_zero(o)
    assert not _is_zero(xo.tensor(np.zeros((3, 4), np.float32), device="cuda"))  # (unknown)
    c1, c2 = H._on(H._scalar(0, t._dtype), t), H._on(H._scalar(0, t._dtype), t)
    assert c1._value is c2._value and c1.to("cpu").numpy() == 0
    x = xo.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    x.requires_grad = True
    zero = xo.tensor(0.0, device="cuda")
    g = xo.grad(lambda v: xo.reduce([v * v], [zero], dimensions=[0, 1], body=xo.add))(x)
    np.testing.assert_array_equal(g.to("cpu").numpy(), 2 * np.arange(12.0).reshape(3, 4))
