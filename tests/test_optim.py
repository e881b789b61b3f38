"""xops.optim: SGD / Adam / AdamW steps against hand-computed updates (and torch.optim
when it imports), parameter identity, zero_grad, param groups, and lr schedules."""

import math

import numpy as np
import pytest

import xops as xo
from xops import nn, optim

GRADS = [np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.3, -0.2]), np.array([-1.5, 0.0, 0.4])]
P0 = np.array([1.0, -2.0, 0.5])


def run(opt_cls, steps=3, dtype="f64", **kw):
    """Apply the fixed GRADS to one parameter; return its values after each step."""
    p = xo.tensor(P0, dtype, requires_grad=True)
    opt = opt_cls([p], **kw)
    out = []
    for g in GRADS[:steps]:
        opt.zero_grad()
        p.grad = xo.tensor(g, dtype)
        opt.step()
        out.append(np.asarray(p, np.float64).copy())
    return p, out


def sgd_ref(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, buf, out = P0.copy(), None, []
    for g in GRADS:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def adam_ref(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False, amsgrad=False):
    p, m, v, top, out = P0.copy(), 0.0, 0.0, 0.0, []
    for t, g in enumerate(GRADS, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        top = np.maximum(top, v)  # (amsgrad: the largest second moment so far)
        mhat, vhat = m / (1 - betas[0] ** t), (top if amsgrad else v) / (1 - betas[1] ** t)
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
        out.append(p)
    return out


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=0.1),
        dict(lr=0.1, weight_decay=0.01),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.5),
        dict(lr=0.05, momentum=0.9, nesterov=True),
        dict(lr=0.05, momentum=0.8, weight_decay=0.1, nesterov=True),
    ],
)
def test_sgd_matches_hand_computed_updates(kw):
    _, got = run(optim.SGD, **kw)
    for g, w in zip(got, sgd_ref(**kw)):
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_sgd_first_step_by_hand():
    _, got = run(optim.SGD, steps=1, lr=0.1, momentum=0.9, weight_decay=0.5)
    # g = grad + 0.5 p = [0.5 + 0.5, -1 - 1, 2 + 0.25]; buf = g; p - 0.1 g
    np.testing.assert_allclose(got[0], [1.0 - 0.1, -2.0 + 0.2, 0.5 - 0.225], rtol=1e-15)


@pytest.mark.parametrize(
    "cls,kw",
    [
        (optim.Adam, dict(lr=0.01)),
        (optim.Adam, dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6)),
        (optim.Adam, dict(lr=0.01, weight_decay=0.1)),
        (optim.AdamW, dict(lr=0.01)),
        (optim.AdamW, dict(lr=0.1, weight_decay=0.5)),
        (optim.Adam, dict(lr=0.1, betas=(0.5, 0.5), amsgrad=True)),  # (v falls at step 2)
        (optim.AdamW, dict(lr=0.1, betas=(0.5, 0.5), weight_decay=0.2, amsgrad=True)),
    ],
)
def test_adam_matches_hand_computed_updates(cls, kw):
    _, got = run(cls, **kw)
    ref_kw = dict(kw)
    if cls is optim.AdamW:
        ref_kw.setdefault("weight_decay", 0.01)
        ref_kw["decoupled"] = True
    for g, w in zip(got, adam_ref(**ref_kw)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_adam_first_step_moves_each_weight_by_lr():
    # bias-corrected first step: m_hat / sqrt(v_hat) = sign(g)
    _, got = run(optim.Adam, steps=1, lr=0.01, eps=0.0)
    np.testing.assert_allclose(got[0], P0 - 0.01 * np.sign(GRADS[0]), rtol=1e-15)


def test_step_keeps_identity_skips_missing_grads_and_reads_groups():
    a = xo.tensor([1.0, 2.0], requires_grad=True)
    b = xo.tensor([3.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.5)
    old = a.detach()
    a.grad = xo.tensor([1.0, 1.0])
    opt.step()
    assert opt.param_groups[0]["params"][0] is a
    assert a.tolist() == [0.5, 1.5] and b.tolist() == [3.0]  # b has no grad: skipped
    assert old.tolist() == [1.0, 2.0]  # earlier values are immutable
    b.grad = xo.tensor([2.0])
    opt.step()
    assert b.tolist() == [1.0] and a.tolist() == [0.0, 1.0]
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = xo.tensor([1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0]


def test_training_a_linear_model_keeps_parameter_objects():
    xo.random_seed(0)
    m = nn.Linear(3, 1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    params = m.parameters()
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    for _ in range(200):
        loss = nn.mse(m(xo.tensor(x)), xo.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert all(p is q for p, q in zip(params, m.parameters()))
    np.testing.assert_allclose(np.asarray(m.weight), [[1.0, -2.0, 0.5]], atol=1e-3)
    np.testing.assert_allclose(np.asarray(m.bias), [0.3], atol=1e-3)


def test_bf16_parameters_step_in_bf16():
    p, got = run(optim.Adam, dtype="bf16", lr=0.01)
    assert p.dtype.name == "bf16"
    np.testing.assert_allclose(got[-1], adam_ref(0.01)[-1], rtol=1e-2)


def test_optimizer_argument_errors():
    p = xo.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="invalid lr"):
        optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="leaf tensors that require a gradient"):
        optim.SGD([xo.tensor([1.0])], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(p, lr=0.1)


# ---------------------------------------------------------------------------------------
# Learning-rate schedules
# ---------------------------------------------------------------------------------------


def _lrs(sched_cls, epochs, lr=0.1, **kw):
    opt = optim.SGD([xo.tensor([1.0], requires_grad=True)], lr=lr)
    s = sched_cls(opt, **kw)
    out = []
    for _ in range(epochs):
        out.append(s.get_last_lr()[0])
        opt.step()
        s.step()
    return out


def test_step_and_cosine_schedules():
    assert _lrs(optim.StepLR, 7, step_size=3, gamma=0.5) == pytest.approx(
        [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025]
    )
    got = _lrs(optim.CosineAnnealingLR, 12, T_max=10, eta_min=0.01)
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * min(t, 10) / 10)) / 2 for t in range(12)]
    assert got == pytest.approx(want)
    assert got[10] == pytest.approx(0.01) and got[11] == pytest.approx(0.01)
    assert _lrs(optim.LambdaLR, 3, lr_lambda=lambda e: 1 / (e + 1)) == pytest.approx(
        [0.1, 0.05, 0.1 / 3]
    )


def test_schedule_state_round_trip():
    opt = optim.SGD([xo.tensor([1.0], requires_grad=True)], lr=1.0)
    s = optim.CosineAnnealingLR(opt, T_max=4)
    s.step(), s.step()
    state = s.state_dict()
    opt2 = optim.SGD([xo.tensor([1.0], requires_grad=True)], lr=1.0)
    s2 = optim.CosineAnnealingLR(opt2, T_max=4)
    s2.load_state_dict(state)
    assert s2.get_last_lr() == s.get_last_lr() == pytest.approx([0.5])


# ---------------------------------------------------------------------------------------
# State dicts: save, load, continue
# ---------------------------------------------------------------------------------------


def _model(seed):
    xo.random_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))


def _batches(n):
    rng = np.random.default_rng(7)
    return [
        (
            xo.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
            xo.tensor(rng.integers(0, 3, 8)),
        )
        for _ in range(n)
    ]


_OPTIMIZERS = [
    (
        optim.SGD,
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
        optim.StepLR,
        dict(step_size=2, gamma=0.5),
    ),
    (optim.SGD, dict(lr=0.1, momentum=0.5, dampening=0.1), None, None),
    (
        optim.Adam,
        dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1),
        optim.CosineAnnealingLR,
        dict(T_max=5, eta_min=0.001),
    ),
    (optim.AdamW, dict(lr=0.02), optim.LambdaLR, dict(lr_lambda=lambda e: 0.9**e)),
]


def _setup(seed, opt_cls, kw, sched_cls, skw):
    m = _model(seed)
    groups = [
        {"params": m[0].parameters() + m[1].parameters()},
        {"params": m[3].parameters(), "lr": kw["lr"] / 2},
    ]
    opt = opt_cls(groups, **kw)
    return m, opt, (sched_cls(opt, **skw) if sched_cls else None)


def _train(m, opt, sched, batches):
    for x, y in batches:
        loss = nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()


def _bits(module):
    return {k: np.asarray(v).tobytes() for k, v in module.state_dict().items()}


@pytest.mark.parametrize(
    "opt_cls,kw,sched_cls,skw",
    _OPTIMIZERS,
    ids=["SGD_nesterov_StepLR", "SGD_dampening", "Adam_Cosine", "AdamW_Lambda"],
)
def test_save_load_and_continue_equals_uninterrupted_training(
    tmp_path, opt_cls, kw, sched_cls, skw
):
    batches = _batches(7)
    m, opt, sched = _setup(0, opt_cls, kw, sched_cls, skw)
    _train(m, opt, sched, batches)  # uninterrupted: 7 steps

    m1, opt1, sched1 = _setup(0, opt_cls, kw, sched_cls, skw)
    _train(m1, opt1, sched1, batches[:4])
    path = tmp_path / "ckpt.npz"
    ckpt = {"model": m1.state_dict(), "optimizer": opt1.state_dict(), "step": 4}
    if sched1 is not None:
        ckpt["scheduler"] = sched1.state_dict()
    nn.save(ckpt, path)
    with np.load(path, allow_pickle=False) as z:  # plain arrays and one JSON string
        assert all(z[k].dtype != object for k in z.files)

    loaded = nn.load(path)
    assert loaded["step"] == 4
    m2, opt2, sched2 = _setup(1, opt_cls, kw, sched_cls, skw)  # other initial weights
    m2.load_state_dict(loaded["model"])
    opt2.load_state_dict(loaded["optimizer"])
    if sched2 is not None:
        sched2.load_state_dict(loaded["scheduler"])
        assert sched2.get_last_lr() == sched1.get_last_lr()
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt1.param_groups]
    _train(m2, opt2, sched2, batches[4:])
    assert _bits(m2) == _bits(m)  # bit for bit
    got, want = opt2.state_dict(), opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    assert sorted(got["state"]) == sorted(want["state"])
    for i, entries in want["state"].items():
        for k, v in entries.items():
            w = got["state"][i][k]
            assert (
                np.asarray(w).tobytes() == np.asarray(v).tobytes()
                if isinstance(v, xo.Tensor)
                else w == v
            )


def test_state_dict_layout_is_pytorchs():
    a = xo.tensor([1.0, 2.0], requires_grad=True)
    b = xo.tensor([3.0], requires_grad=True)
    c = xo.tensor([4.0], requires_grad=True)
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    a.grad, c.grad = xo.tensor([1.0, 1.0]), xo.tensor([2.0])
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1] == dict(
        lr=0.5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, params=[2]
    )
    assert sorted(sd["state"]) == [0, 2]  # b had no gradient: no state
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["state"][2]["step"] == 1
    np.testing.assert_allclose(np.asarray(sd["state"][2]["exp_avg"]), [0.2])
    snapshot = np.asarray(sd["state"][0]["exp_avg"]).copy()
    opt.step()
    np.testing.assert_array_equal(np.asarray(sd["state"][0]["exp_avg"]), snapshot)

    torch = pytest.importorskip("torch")  # the same keys and layout as torch.optim
    tp = [torch.tensor(v, requires_grad=True) for v in ([1.0, 2.0], [3.0], [4.0])]
    topt = torch.optim.Adam([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.5}], lr=0.1)
    tp[0].grad, tp[2].grad = torch.ones(2), torch.tensor([2.0])
    topt.step()
    tsd = topt.state_dict()
    assert [g["params"] for g in tsd["param_groups"]] == [[0, 1], [2]]
    assert sorted(tsd["state"]) == [0, 2] and set(tsd["state"][0]) == set(sd["state"][0])


def test_load_state_dict_checks_groups_and_shapes():
    a = xo.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = xo.tensor([1.0, 1.0])
    opt.step()
    sd = opt.state_dict()
    two = optim.SGD(
        [
            {"params": [xo.tensor([1.0, 2.0], requires_grad=True)]},
            {"params": [xo.tensor([1.0], requires_grad=True)]},
        ],
        lr=0.1,
    )
    with pytest.raises(ValueError, match="1 parameter groups, this optimizer 2"):
        two.load_state_dict(sd)
    bigger = optim.SGD(
        [xo.tensor([1.0, 2.0], requires_grad=True), xo.tensor([1.0], requires_grad=True)], lr=0.1
    )
    with pytest.raises(ValueError, match="group 0 has 1 parameters in the state, 2"):
        bigger.load_state_dict(sd)
    other = optim.SGD([xo.tensor([1.0, 2.0, 3.0], requires_grad=True)], lr=0.2)
    with pytest.raises(ValueError, match="momentum_buffer"):
        other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.2 and not other.state  # nothing changed
    fresh = optim.SGD([xo.tensor([5.0, 6.0], requires_grad=True)], lr=0.7)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == 0.1 and fresh.param_groups[0]["momentum"] == 0.9


def test_scheduler_state_holds_its_settings_and_round_trips_through_npz(tmp_path):
    opt = optim.SGD([xo.tensor([1.0], requires_grad=True)], lr=0.1)
    s = optim.StepLR(opt, step_size=3, gamma=0.5)
    for _ in range(4):
        s.step()
    sd = s.state_dict()
    assert sd == dict(step_size=3, gamma=0.5, base_lrs=[0.1], last_epoch=4)
    nn.save(s, tmp_path / "sched.npz")
    loaded = nn.load(tmp_path / "sched.npz")
    assert loaded == sd and isinstance(loaded["last_epoch"], int)
    opt2 = optim.SGD([xo.tensor([1.0], requires_grad=True)], lr=0.1)
    s2 = optim.StepLR(opt2, step_size=1, gamma=0.9)
    s2.load_state_dict(loaded)
    assert (s2.step_size, s2.gamma) == (3, 0.5)
    assert s2.get_last_lr() == s.get_last_lr() == [0.05]
    lam = optim.LambdaLR(opt2, lr_lambda=lambda e: 1.0)
    assert "lr_lambda" not in lam.state_dict()


# ---------------------------------------------------------------------------------------
# Against torch.optim (skipped when torch is not installed)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,kw",
    [
        ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
        ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.1)),
        ("Adam", dict(lr=0.01, weight_decay=0.1)),
        ("AdamW", dict(lr=0.05, weight_decay=0.2)),
    ],
)
def test_optimizers_match_torch(name, kw):
    torch = pytest.importorskip("torch")
    tp = torch.tensor(P0, requires_grad=True)
    topt = getattr(torch.optim, name)([tp], **kw)
    p = xo.tensor(P0, requires_grad=True)
    opt = getattr(optim, name)([p], **kw)
    for g in GRADS * 2:
        topt.zero_grad()
        tp.grad = torch.tensor(g)
        topt.step()
        opt.zero_grad()
        p.grad = xo.tensor(g)
        opt.step()
        np.testing.assert_allclose(np.asarray(p), tp.detach().numpy(), rtol=1e-12, atol=1e-15)


def test_schedules_match_torch():
    torch = pytest.importorskip("torch")
    for cls, kw in [
        ("StepLR", dict(step_size=2, gamma=0.3)),
        ("CosineAnnealingLR", dict(T_max=5, eta_min=0.001)),
    ]:
        tp = torch.zeros(1, requires_grad=True)
        topt = torch.optim.SGD([tp], lr=0.2)
        ts = getattr(torch.optim.lr_scheduler, cls)(topt, **kw)
        want = []
        for _ in range(5):
            want.append(ts.get_last_lr()[0])
            topt.step()
            ts.step()
        assert _lrs(getattr(optim, cls), 5, lr=0.2, **kw) == pytest.approx(want, rel=1e-12)


def test_amsgrad_changes_the_update_once_the_second_moment_falls():
    _, plain = run(optim.Adam, lr=0.1, betas=(0.5, 0.5))
    _, ams = run(optim.Adam, lr=0.1, betas=(0.5, 0.5), amsgrad=True)
    np.testing.assert_array_equal(plain[0], ams[0])  # (one step: the maximum is v)
    assert not np.allclose(plain[1], ams[1])


def test_amsgrad_on_float32_takes_the_op_path_with_the_same_rule():
    _, got = run(optim.Adam, dtype="f32", lr=0.1, betas=(0.5, 0.5), amsgrad=True)
    for g, w in zip(got, adam_ref(lr=0.1, betas=(0.5, 0.5), amsgrad=True)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def rmsprop_ref(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    p, sq, ga, buf, out = P0.copy(), 0.0, 0.0, 0.0, []
    for g in GRADS:
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        avg = sq
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = sq - ga * ga
        step = g / (np.sqrt(avg) + eps)
        if momentum:
            buf = momentum * buf + step
            step = buf
        p = p - lr * step
        out.append(p)
    return out


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(lr=0.1, alpha=0.9, weight_decay=0.1),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.5, centered=True, eps=1e-6),
    ],
)
def test_rmsprop_matches_hand_computed_updates(kw):
    _, got = run(optim.RMSprop, **kw)
    for g, w in zip(got, rmsprop_ref(**kw)):
        np.testing.assert_allclose(g, w, rtol=1e-13)


@pytest.mark.parametrize(
    "kw", [dict(), dict(lr=0.1, lr_decay=0.5, weight_decay=0.2, initial_accumulator_value=0.3)]
)
def test_adagrad_matches_hand_computed_updates(kw):
    lr, decay = kw.get("lr", 1e-2), kw.get("lr_decay", 0.0)
    p, total, want = P0.copy(), kw.get("initial_accumulator_value", 0.0), []
    for t, g in enumerate(GRADS, 1):
        g = g + kw.get("weight_decay", 0.0) * p
        total = total + g * g
        p = p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(total) + 1e-10)
        want.append(p)
    _, got = run(optim.Adagrad, **kw)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_schedules_multistep_exponential_linear():
    def lrs(make, n=8):
        p = xo.tensor([1.0], requires_grad=True)
        opt = optim.SGD([p], lr=0.5)
        sched = make(opt)
        out = []
        for _ in range(n):
            out.append(opt.param_groups[0]["lr"])
            sched.step()
        return out

    assert lrs(lambda o: optim.MultiStepLR(o, [2, 5], 0.1)) == pytest.approx(
        [0.5, 0.5, 0.05, 0.05, 0.05, 0.005, 0.005, 0.005]
    )
    assert lrs(lambda o: optim.ExponentialLR(o, 0.5), 4) == pytest.approx(
        [0.5, 0.25, 0.125, 0.0625]
    )
    assert lrs(lambda o: optim.LinearLR(o, 0.25, 1.0, 3), 5) == pytest.approx(
        [0.125, 0.25, 0.375, 0.5, 0.5]
    )
    with pytest.raises(ValueError, match="start_factor"):
        lrs(lambda o: optim.LinearLR(o, 0.0))


def test_more_optimizers_and_schedules_vs_torch():
    torch = pytest.importorskip("torch")
    for mine, theirs, kw in [
        (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.05, momentum=0.5, centered=True)),
        (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, weight_decay=0.1)),
        (optim.Adagrad, torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.05)),
    ]:
        _, got = run(mine, **kw)
        tp = torch.nn.Parameter(torch.tensor(P0))
        topt = theirs([tp], **kw)
        for g, w in zip(GRADS, got):
            tp.grad = torch.tensor(g)
            topt.step()
            np.testing.assert_allclose(w, tp.detach().numpy(), rtol=1e-12)
    for mine, theirs, args in [
        (optim.MultiStepLR, torch.optim.lr_scheduler.MultiStepLR, ([3, 4], 0.3)),
        (optim.ExponentialLR, torch.optim.lr_scheduler.ExponentialLR, (0.7,)),
        (optim.LinearLR, torch.optim.lr_scheduler.LinearLR, (0.2, 0.9, 4)),
    ]:
        p = xo.tensor([1.0], requires_grad=True)
        opt = optim.SGD([p], lr=0.5)
        sched = mine(opt, *args)
        tp = torch.nn.Parameter(torch.ones(1))
        topt = torch.optim.SGD([tp], lr=0.5)
        tsched = theirs(topt, *args)
        for _ in range(7):
            assert opt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"], rel=1e-12)
            topt.step()
            sched.step()
            tsched.step()
