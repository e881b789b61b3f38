"""xops.nn: parameter discovery, state dicts and .npz files, train/eval switches, every
layer against a NumPy reference (and torch.nn when it imports), initialisers, and the
gradients of a small CNN against finite differences (float64)."""

import math

import numpy as np
import pytest

import xops as xo
from xops import nn
from gradcheck import check_grads

F = nn.functional


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def T(a):
    return xo.tensor(a)


# ---------------------------------------------------------------------------------------
# NumPy references (index-shaped, as the spec's reference functions)
# ---------------------------------------------------------------------------------------


def conv2d_ref(x, w, b=None, stride=(1, 1), padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1):
    """Cross-correlation, loop over output positions: out[n, o, i, j] = sum over the
    window of padded x times w (per group)."""
    x = np.pad(x, ((0, 0), (0, 0), padding[0], padding[1]))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    dh, dw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = (h - dh) // stride[0] + 1, (wd - dw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og]
        for i in range(oh):
            for j in range(ow):
                win = xs[
                    :,
                    :,
                    i * stride[0] : i * stride[0] + dh : dilation[0],
                    j * stride[1] : j * stride[1] + dw : dilation[1],
                ]
                out[:, g * og : (g + 1) * og, i, j] = np.einsum("nchw,ochw->no", win, ws)
    if b is not None:
        out += b[None, :, None, None]
    return out


def pool_ref(x, k, s, pad, reduce_fn, fill):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.empty((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce_fn(x[:, :, i * s : i * s + k, j * s : j * s + k], axis=(2, 3))
    return out


def log_softmax_ref(z, axis=-1):
    z = z.astype(np.float64)
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------------------------------
# Module: discovery, modes, state dicts
# ---------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, np.float32))
        self.fc = nn.Linear(3, 2)
        self.heads = [nn.Linear(2, 2), nn.Linear(2, 1, bias=False)]
        self.table = {"a": nn.Linear(1, 1)}
        self.const = xo.tensor([1.0, 2.0, 3.0])  # no requires_grad: neither
        self.register_buffer("count", xo.tensor(0, "i64"))
        self.name = "block"

    def forward(self, x):
        h = self.fc(x * self.scale)
        self.last = h  # an op output: never a parameter
        for m in self.heads:
            h = m(h)
        return h


def test_parameter_discovery_order_and_names():
    b = Block()
    b(T(rand(4, 3)))
    names = [n for n, _ in b.named_parameters()]
    assert names == [
        "scale",
        "fc.weight",
        "fc.bias",
        "heads.0.weight",
        "heads.0.bias",
        "heads.1.weight",
        "table.a.weight",
        "table.a.bias",
    ]
    assert [n for n, _ in b.named_buffers()] == ["count"]
    assert all(p.requires_grad for p in b.parameters())
    assert b.num_parameters() == 3 + 6 + 2 + 4 + 2 + 2 + 1 + 1
    assert list(b.state_dict()) == names + ["count"]
    assert [n for n, _ in b.named_modules()] == ["", "fc", "heads.0", "heads.1", "table.a"]


def test_frozen_parameter_stays_registered_and_shared_ones_are_listed_once():
    b = Block()
    b.fc.weight.requires_grad_(False)
    assert "fc.weight" in dict(b.named_parameters())
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    # a non-tensor value unregisters a name
    b.scale = 3.0
    assert "scale" not in dict(b.named_parameters())


def test_train_eval_switch_reaches_every_submodule():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(2)))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())


def test_repr_lists_children():
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU())
    text = repr(m)
    assert "(0): Conv2d(1, 4, kernel_size=(3, 3)" in text and "(1): ReLU()" in text


def _cnn(seed=0):
    xo.random_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 2 * 2, 3),
    )


def test_state_dict_round_trip_keeps_identity_and_values():
    a, b = _cnn(0), _cnn(1)
    a(T(rand(5, 1, 4, 4)))  # updates a's running statistics
    x = T(rand(3, 1, 4, 4, seed=1))
    a.eval(), b.eval()
    before = [id(p) for p in b.parameters()]
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert [id(p) for p in b.parameters()] == before
    assert all(p.requires_grad for p in b.parameters())
    np.testing.assert_array_equal(np.asarray(a(x)), np.asarray(b(x)))
    assert int(b[1].num_batches_tracked) == 1


def test_state_dict_is_a_snapshot():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    w0 = np.asarray(sd["weight"]).copy()
    with xo.no_grad():
        nn.assign_(m.weight, m.weight + 1.0)
    np.testing.assert_array_equal(np.asarray(sd["weight"]), w0)
    np.testing.assert_array_equal(np.asarray(m.weight), w0 + 1)


def test_load_state_dict_errors_name_every_problem():
    m = _cnn()
    sd = dict(m.state_dict())
    extra = dict(sd, **{"9.weight": xo.tensor([1.0])})
    del extra["0.bias"]
    with pytest.raises(
        KeyError,
        match=r"missing keys \['0.bias'\].*"
        r"unexpected keys \['9.weight'\]",
    ):
        m.load_state_dict(extra)
    res = m.load_state_dict(extra, strict=False)
    assert res.missing_keys == ["0.bias"] and res.unexpected_keys == ["9.weight"]
    bad = dict(
        sd,
        **{
            "5.weight": xo.tensor(np.zeros((3, 8), np.float32)),
            "1.weight": xo.tensor(np.ones(4), "f64"),
        },
    )
    with pytest.raises(
        ValueError,
        match=r"'1.weight': element type f64 .* f32.*"
        r"'5.weight': shape \(3, 8\) in the state dict, "
        r"\(3, 16\) in the module",
    ):
        m.load_state_dict(bad)
    with pytest.raises(ValueError):
        m.load_state_dict(bad, strict=False)  # shapes and types are checked even then
    # a failed load changes nothing, not even the entries that fit
    other = dict(_cnn(1).state_dict())
    other["5.bias"] = xo.tensor([1.0])
    w0 = np.asarray(m[0].weight).copy()
    with pytest.raises(ValueError):
        m.load_state_dict(other)
    np.testing.assert_array_equal(np.asarray(m[0].weight), w0)


def test_load_state_dict_accepts_numpy_arrays():
    m = nn.Linear(3, 2)
    w = rand(2, 3)
    m.load_state_dict({"weight": w, "bias": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(np.asarray(m.weight), w)


def test_assign_checks():
    p = xo.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="shape"):
        nn.assign_(p, xo.tensor([1.0]))
    with pytest.raises(ValueError, match="element type f64"):
        nn.assign_(p, xo.tensor([1.0, 2.0], "f64"))
    with pytest.raises(ValueError, match="leaf"):
        nn.assign_(p * 2, xo.tensor([1.0, 2.0]))
    q = nn.assign_(p, [3.0, 4.0])
    assert q is p and p.tolist() == [3.0, 4.0] and p.requires_grad


# ---------------------------------------------------------------------------------------
# .npz files
# ---------------------------------------------------------------------------------------


def test_npz_round_trip_with_bf16_and_integer_buffers(tmp_path):
    m = _cnn()
    m(T(rand(4, 1, 4, 4)))
    m.to("bf16")
    assert m[0].weight.dtype.name == "bf16" and m[1].num_batches_tracked.dtype.name == "i64"
    path = tmp_path / "w.npz"
    nn.save(m, path)
    with np.load(path, allow_pickle=False) as z:  # plain arrays only: no pickle
        assert z["0.weight"].dtype == np.uint16 and z["1.num_batches_tracked"].dtype == np.int64
        assert all(z[k].dtype != object for k in z.files)
    loaded = nn.load(path)
    sd = m.state_dict()
    assert list(loaded) == list(sd)
    for k, v in sd.items():
        assert loaded[k].dtype is v.dtype
        np.testing.assert_array_equal(
            np.asarray(loaded[k]).reshape(-1).view(np.uint8),
            np.asarray(v).reshape(-1).view(np.uint8),
        )
    fresh = _cnn(5).to("bf16")
    fresh.load_state_dict(loaded)
    x = xo.convert(T(rand(2, 1, 4, 4, seed=3)), "bf16")
    m.eval(), fresh.eval()
    np.testing.assert_array_equal(
        np.asarray(m(x)).view(np.uint16), np.asarray(fresh(x)).view(np.uint16)
    )


def test_npz_of_plain_arrays_and_bad_keys(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, a=np.arange(3.0))
    assert nn.load(path)["a"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="__xops_"):
        nn.save({"__xops_keys__": xo.tensor([1.0])}, tmp_path / "bad.npz")


def test_npz_nested_tree_round_trip(tmp_path):
    bf = xo.tensor([1.5, -2.0], "bf16")
    tree = {
        "model": {"w": xo.tensor([[1.0, 2.0]]), "n": xo.tensor(3, "i64")},
        "state": {0: {"step": 2, "buf": bf}, 7: {}},
        "groups": [
            {
                "lr": 0.1 + 0.2,
                "betas": (0.9, 0.999),
                "nesterov": True,
                "name": "head",
                "none": None,
                "params": [0, 7],
            }
        ],
        "specials": [float("inf"), float("-inf"), -0.0, 1e-310, 2**70],
        "nan": float("nan"),
        "array": np.arange(3, dtype=np.int16),
    }
    path = tmp_path / "tree.npz"
    nn.save(tree, path)
    with np.load(path, allow_pickle=False) as z:
        assert sorted(k for k in z.files if not k.startswith("__xops_")) == [
            "array",
            "model.n",
            "model.w",
            "state.0.buf",
        ]
        assert z["state.0.buf"].dtype == np.uint16  # bf16 as its bits, as in flat files
    got = nn.load(path)
    assert set(got) == set(tree) and sorted(got["state"]) == [0, 7]  # int keys stay ints
    assert got["state"][0]["step"] == 2 and got["state"][7] == {}
    assert got["state"][0]["buf"].dtype.name == "bf16"
    assert got["state"][0]["buf"].tolist() == [1.5, -2.0]
    assert got["model"]["n"].dtype.name == "i64" and got["model"]["w"].tolist() == [[1.0, 2.0]]
    assert got["groups"] == tree["groups"]  # the tuple stays a tuple, 0.1 + 0.2 exact
    assert isinstance(got["groups"][0]["betas"], tuple)
    assert got["specials"] == tree["specials"] and math.copysign(1, got["specials"][2]) == -1
    assert math.isnan(got["nan"])
    assert got["array"].dtype.name == "i16" and got["array"].tolist() == [0, 1, 2]


def test_npz_nested_tree_errors(tmp_path):
    with pytest.raises(TypeError, match="cannot store a set"):
        nn.save({"a": {1, 2}}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="keys must be strings or ints"):
        nn.save({"a": {(1, 2): 3}}, tmp_path / "x.npz")
    with pytest.raises(ValueError, match="__xops_"):
        nn.save({"__xops_tree__": {"a": xo.tensor([1.0])}}, tmp_path / "x.npz")


# ---------------------------------------------------------------------------------------
# Layers against NumPy references
# ---------------------------------------------------------------------------------------


def test_linear_matches_numpy():
    m = nn.Linear(5, 3)
    x = rand(2, 4, 5)
    want = x @ np.asarray(m.weight).T + np.asarray(m.bias)
    np.testing.assert_allclose(np.asarray(m(T(x))), want, rtol=1e-5, atol=1e-6)
    assert nn.Linear(5, 3, bias=False)(T(x)).shape == (2, 4, 3)


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(stride=2),
        dict(padding=1),
        dict(padding=(2, 0)),
        dict(dilation=2),
        dict(groups=2),
        dict(stride=(2, 1), padding=((1, 0), (0, 2))),
        dict(padding="same"),
        dict(padding="same", dilation=2),
    ],
)
def test_conv2d_matches_numpy(kw):
    m = nn.Conv2d(4, 6, 3, **kw)
    x = rand(2, 4, 7, 6)
    pad = F._conv_padding(kw.get("padding", 0), (3, 3), F._tuple(kw.get("dilation", 1), 2, ""), 2)
    want = conv2d_ref(
        x.astype(np.float64),
        np.asarray(m.weight, np.float64),
        np.asarray(m.bias, np.float64),
        F._tuple(kw.get("stride", 1), 2, ""),
        pad,
        F._tuple(kw.get("dilation", 1), 2, ""),
        kw.get("groups", 1),
    )
    got = m(T(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
    if kw.get("padding") == "same":
        assert got.shape[2:] == x.shape[2:]


def test_conv1d_matches_numpy():
    m = nn.Conv1d(3, 2, 3, stride=2, padding=1)
    x = rand(2, 3, 9)
    want = conv2d_ref(
        x[:, :, None, :].astype(np.float64),
        np.asarray(m.weight, np.float64)[:, :, None, :],
        np.asarray(m.bias, np.float64),
        (1, 2),
        ((0, 0), (1, 1)),
    )[:, :, 0]
    np.testing.assert_allclose(np.asarray(m(T(x))), want, rtol=1e-4, atol=1e-5)


def test_pools_match_numpy():
    x = rand(2, 3, 7, 7)
    np.testing.assert_array_equal(
        np.asarray(nn.MaxPool2d(2)(T(x))), pool_ref(x, 2, 2, 0, np.max, -np.inf)
    )
    np.testing.assert_array_equal(
        np.asarray(nn.MaxPool2d(3, 2, 1)(T(x))), pool_ref(x, 3, 2, 1, np.max, -np.inf)
    )
    np.testing.assert_allclose(
        np.asarray(nn.AvgPool2d(2)(T(x))), pool_ref(x, 2, 2, 0, np.mean, 0), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        np.asarray(nn.AvgPool2d(3, 2, 1)(T(x))),
        pool_ref(x, 3, 2, 1, np.mean, 0),
        rtol=1e-5,
        atol=1e-7,
    )
    ones = np.ones_like(x)
    count = pool_ref(ones, 3, 2, 1, np.sum, 0)
    np.testing.assert_allclose(
        np.asarray(nn.AvgPool2d(3, 2, 1, count_include_pad=False)(T(x))),
        pool_ref(x, 3, 2, 1, np.sum, 0) / count,
        rtol=1e-5,
    )


def test_activations_match_numpy():
    from scipy.special import erf

    x = rand(3, 5) * 3
    x[0, 0] = 0.0
    x[0, 1] = np.nan
    np.testing.assert_array_equal(np.asarray(nn.ReLU()(T(x))), np.maximum(x, 0))
    exact = 0.5 * x * (1 + erf(x / np.sqrt(2)))
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.asarray(nn.GELU()(T(x))), exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.GELU("tanh")(T(x))), approx, rtol=1e-5, atol=1e-6)
    # relu's gradient is 0 at 0 (PyTorch's convention)
    x[0, 1] = 1.0
    g = xo.grad(lambda t: F.sum(F.relu(t)))(T(x))
    np.testing.assert_array_equal(np.asarray(g), (x > 0).astype(np.float32))


def _bits_of(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize <= 8 else a.view(np.uint64)


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "i1", "c128"])
def test_select_kernel_is_np_where_bit_for_bit(dtype):
    # xo.select (relu's and its gradient's op) runs on a Numba kernel over raw bits from
    # 2048 elements on; c128 (16-byte elements) stays on np.where
    rng = np.random.default_rng(1)
    shape = (3, 40, 30)
    a = (rng.standard_normal(shape) * 4).astype(np.float64)
    if dtype == "i1":
        t, f = xo.tensor(a > 0), xo.tensor(a > 1)
    else:
        a[0, 0, :4] = [np.nan, -0.0, np.inf, 0.0]
        t = xo.tensor(a, dtype)
        bits = np.asarray(t).copy()
        if dtype == "f32":  # a NaN with a payload must come through as it is
            bits.view(np.uint32)[0, 0, 0] = 0x7FC01234
        t = xo.tensor(bits, dtype)
        f = xo.multiply(t, 3.0) if dtype != "c128" else xo.tensor(a * 3, dtype)
    p = xo.tensor(rng.random(shape) < 0.5)
    tv, fv, pv = np.asarray(t), np.asarray(f), np.asarray(p)
    np.testing.assert_array_equal(_bits_of(xo.select(p, t, f)), _bits_of(np.where(pv, tv, fv)))
    zero, weak = np.zeros((), tv.dtype), (False if dtype == "i1" else 0)  # a weak scalar
    for on_t, on_f, want in [(weak, t, np.where(pv, zero, tv)), (t, weak, np.where(pv, tv, zero))]:
        np.testing.assert_array_equal(_bits_of(xo.select(p, on_t, on_f)), _bits_of(want))
    # operands in one transposed layout are read in memory order: same values
    tt = xo.transpose(
        xo.tensor(np.ascontiguousarray(np.transpose(tv, (2, 0, 1))), t.dtype), [1, 2, 0]
    )
    pt = xo.transpose(xo.tensor(np.ascontiguousarray(np.transpose(pv, (2, 0, 1)))), [1, 2, 0])
    np.testing.assert_array_equal(_bits_of(xo.select(pt, tt, f)), _bits_of(np.where(pv, tv, fv)))
    np.testing.assert_array_equal(
        _bits_of(xo.select(pt, weak, tt)), _bits_of(np.where(pv, zero, tv))
    )


def test_select_kernel_parallel_equals_serial_and_relu_gradient(monkeypatch):
    import xops.kernels.config as kconfig

    x = rand(4, 16, 30, 30)
    x[0, 0, 0, :3] = [0.0, -0.0, np.nan]
    serial = np.asarray(F.relu(T(x)))
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    parallel = np.asarray(F.relu(T(x)))
    np.testing.assert_array_equal(parallel.view(np.uint32), serial.view(np.uint32))
    np.testing.assert_array_equal(serial, np.where(x <= 0, 0, x))  # NaN stays NaN
    g = rand(*x.shape, seed=2)
    _, vjp = xo.vjp(F.relu, T(x))
    (gx,) = vjp(T(g))
    np.testing.assert_array_equal(np.asarray(gx), np.where(x <= 0, 0, g))  # 0 at x = 0


def test_softmax_and_cross_entropy_are_stable():
    z = rand(4, 6) * 5
    z[0] += 1e4  # exp would overflow without the max shift
    z[1, 2] = -1e4
    np.testing.assert_allclose(
        np.asarray(F.log_softmax(T(z), 1)), log_softmax_ref(z, 1), rtol=1e-5, atol=1e-4
    )
    np.testing.assert_allclose(
        np.asarray(F.softmax(T(z), 1)), np.exp(log_softmax_ref(z, 1)), rtol=1e-5, atol=1e-7
    )
    labels = np.array([1, 0, 2, 5])
    want = -log_softmax_ref(z, 1)[np.arange(4), labels]
    loss = F.cross_entropy(T(z), xo.tensor(labels, "i32"), reduction="none")
    np.testing.assert_allclose(np.asarray(loss), want, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(
        nn.softmax_cross_entropy(T(z), T(labels)).item(), want.mean(), rtol=1e-5
    )
    assert math.isfinite(F.cross_entropy(T(z), T(labels), reduction="sum").item())
    # the gradient of the mean loss is (softmax - one_hot) / N
    g = xo.grad(lambda t: F.cross_entropy(t, T(labels)))(T(z))
    onehot = np.eye(6)[labels]
    np.testing.assert_allclose(
        np.asarray(g), (np.exp(log_softmax_ref(z, 1)) - onehot) / 4, atol=1e-6
    )


def test_cross_entropy_spatial_and_label_smoothing():
    z = rand(2, 4, 3)
    y = np.array([[0, 3, 1], [2, 2, 0]])
    lp = log_softmax_ref(z, 1)
    nll = -np.take_along_axis(lp, y[:, None, :], 1)[:, 0]
    np.testing.assert_allclose(F.cross_entropy(T(z), T(y)).item(), nll.mean(), rtol=1e-5)
    eps = 0.1
    target = np.eye(4)[y].transpose(0, 2, 1) * (1 - eps) + eps / 4
    want = -(lp * target).sum(1).mean()
    np.testing.assert_allclose(
        F.cross_entropy(T(z), T(y), label_smoothing=eps).item(), want, rtol=1e-5
    )
    with pytest.raises(ValueError, match="labels must be integers"):
        F.cross_entropy(T(z), T(y.astype(np.float32)))
    with pytest.raises(ValueError, match="labels must have shape"):
        F.cross_entropy(T(z), T(y[:, :2]))


def xent_ref(z, y, weight=None, ignore_index=-100, eps=0.0, reduction="mean"):
    """PyTorch's cross_entropy with class weights, ignore_index and label smoothing."""
    lp = np.moveaxis(log_softmax_ref(z, 1), 1, -1)  # (N, ..., C)
    c = z.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    keep = y != ignore_index
    safe = np.where(keep, y, 0)
    w_y = np.where(keep, w[safe], 0.0)
    nll = -np.take_along_axis(lp, safe[..., None], -1)[..., 0] * w_y
    smooth = np.where(keep, -(lp * w).sum(-1), 0.0)
    per = (1 - eps) * nll + eps / c * smooth
    if reduction == "none":
        return per
    return per.sum() / (w_y.sum() if reduction == "mean" else 1.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.2])
@pytest.mark.parametrize("spatial", [False, True])
def test_cross_entropy_weight_and_ignore_index(reduction, eps, spatial):
    z = rand(5, 4, 3, dtype=np.float64) if spatial else rand(5, 4, dtype=np.float64)
    y = np.array([[0, 3, -100], [2, 2, 1], [1, -100, 0], [3, 0, 2], [-100, 1, 1]])
    y = y if spatial else y[:, 0]
    w = np.array([1.0, 2.5, 0.5, 1.5])
    for kw in (dict(weight=w), dict(), dict(weight=w, ignore_index=2)):
        yy = np.where(y == -100, 2, y) if kw.get("ignore_index") == 2 else y
        want = xent_ref(z, yy, eps=eps, reduction=reduction, **kw)
        got = F.cross_entropy(T(z), T(yy), reduction, eps, **kw)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
        check_grads(lambda t: F.cross_entropy(t, T(yy), reduction, eps, **kw), [z])
    # nll_loss takes the same weight / ignore_index
    lp = log_softmax_ref(z, 1)
    got = F.nll_loss(T(lp), T(y), reduction, weight=w)
    np.testing.assert_allclose(np.asarray(got), xent_ref(z, y, w, reduction=reduction), rtol=1e-12)


def test_cross_entropy_weight_checks_and_all_ignored():
    z = rand(3, 4, dtype=np.float64)
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\)"):
        F.cross_entropy(T(z), T([0, 1, 2]), weight=np.ones(3))
    with pytest.raises(ValueError, match="or ignore_index -100, got values in"):
        F.cross_entropy(T(z), T([0, 7, -100]))
    assert np.isnan(F.cross_entropy(T(z), T([-100, -100, -100])).item())  # 0 / 0, as PyTorch
    loss = nn.CrossEntropyLoss(weight=T([1.0, 2.0, 3.0, 4.0]), ignore_index=0)
    np.testing.assert_allclose(
        loss(T(z), T([0, 1, 3])).item(),
        xent_ref(z, np.array([0, 1, 3]), [1.0, 2.0, 3.0, 4.0], 0),
        rtol=1e-12,
    )


def test_cross_entropy_options_vs_torch():
    torch = pytest.importorskip("torch")
    z = rand(6, 5, 2, seed=3, dtype=np.float64)
    y = np.array([[0, 4], [-100, 1], [3, 3], [2, -100], [4, 0], [1, 1]])
    w = np.array([0.5, 1.0, 2.0, 1.5, 3.0])
    for red in ("mean", "sum", "none"):
        for eps in (0.0, 0.3):
            tz = torch.tensor(z, requires_grad=True)
            want = torch.nn.functional.cross_entropy(
                tz, torch.tensor(y), weight=torch.tensor(w), reduction=red, label_smoothing=eps
            )
            want.backward(torch.ones_like(want))
            xz = xo.tensor(z, requires_grad=True)
            got = F.cross_entropy(xz, T(y), red, eps, weight=w)
            xo.autodiff.backward(got, xo.tensor(np.ones(np.shape(np.asarray(got)))))
            np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(np.asarray(xz.grad), tz.grad.numpy(), rtol=1e-10)


def test_mse_flatten_embedding_one_hot():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    np.testing.assert_allclose(nn.mse(T(a), T(b)).item(), ((a - b) ** 2).mean(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(F.mse_loss(T(a), T(b), "none")), (a - b) ** 2, rtol=1e-6)
    assert nn.Flatten()(T(rand(2, 3, 4, 5))).shape == (2, 60)
    assert nn.Flatten(0, 1)(T(rand(2, 3, 4))).shape == (6, 4)
    e = nn.Embedding(5, 3)
    idx = np.array([[4, 0], [2, 2]])
    np.testing.assert_array_equal(np.asarray(e(T(idx))), np.asarray(e.weight)[idx])
    g = xo.grad(lambda w: F.sum(F.embedding(T(idx), w)))(e.weight.detach())
    np.testing.assert_array_equal(np.asarray(g)[:, 0], [1, 0, 2, 0, 1])
    np.testing.assert_array_equal(np.asarray(F.one_hot(T([2, 0]), 3)), np.eye(3)[[2, 0]])


# ---------------------------------------------------------------------------------------
# BatchNorm and Dropout: training vs evaluation
# ---------------------------------------------------------------------------------------


def test_batchnorm_training_updates_running_stats_unbiased():
    bn = nn.BatchNorm2d(3, momentum=0.2)
    x = rand(4, 3, 2, 5) * 2 + 1
    out = bn(T(x))
    mean = x.mean(axis=(0, 2, 3), dtype=np.float64)
    var = x.var(axis=(0, 2, 3), dtype=np.float64)
    n = x.size // 3
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(bn.running_mean), 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(bn.running_var), 0.8 + 0.2 * var * n / (n - 1), rtol=1e-5)
    assert int(bn.num_batches_tracked) == 1
    # eval: normalise with the running statistics, and leave them alone
    bn.eval()
    rm, rv = np.asarray(bn.running_mean).copy(), np.asarray(bn.running_var).copy()
    y = rand(2, 3, 2, 2, seed=4)
    want = (y - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(np.asarray(bn(T(y))), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(bn.running_mean), rm)
    assert int(bn.num_batches_tracked) == 1


def test_batchnorm_cumulative_average_with_momentum_none():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [rand(5, 2, seed=s) + s for s in range(3)]
    for x in xs:
        bn(T(x))
    np.testing.assert_allclose(
        np.asarray(bn.running_mean), np.mean([x.mean(0) for x in xs], 0), rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(bn.running_var), np.mean([x.var(0, ddof=1) for x in xs], 0), rtol=1e-5
    )


def test_batchnorm1d_and_untracked_stats():
    bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    assert bn.parameters() == [] and bn.buffers() == []
    x = rand(6, 4)
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(np.asarray(bn.eval()(T(x))), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="rank 2 or 3"):
        nn.BatchNorm1d(4)(T(rand(2, 4, 1, 1)))


def test_dropout_train_eval_and_reproducibility():
    x = T(np.ones((200, 50), np.float32))
    d = nn.Dropout(0.3)
    xo.random_seed(7)
    a = np.asarray(d(x))
    xo.random_seed(7)
    b = np.asarray(d(x))
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((a == 0).mean() - 0.3) < 0.02
    assert d.eval()(x) is x
    g1, g2 = nn.Generator(3), nn.Generator(3)
    da, db = nn.Dropout(0.5, g1), nn.Dropout(0.5, g2)
    np.testing.assert_array_equal(np.asarray(da(x)), np.asarray(db(x)))
    # the gradient flows only through kept elements, scaled
    xo.random_seed(1)
    g = xo.grad(lambda t: F.sum(F.dropout(t, 0.5)))(x)
    assert set(np.unique(np.asarray(g))) <= {0.0, 2.0}


# ---------------------------------------------------------------------------------------
# Initialisers
# ---------------------------------------------------------------------------------------


def test_fans_and_gains():
    assert nn.init.calculate_fan_in_and_fan_out([16, 3, 3, 3]) == (27, 144)
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError):
        nn.init.calculate_gain("swish")


@pytest.mark.parametrize("gen", [False, True])
def test_initialiser_statistics(gen):
    g = nn.Generator(0) if gen else None
    xo.random_seed(0)
    shape = [256, 64, 3, 3]
    fan_in, fan_out = 576, 2304
    ku = np.asarray(nn.init.kaiming_uniform(shape, nonlinearity="relu", generator=g))
    bound = math.sqrt(2) * math.sqrt(3 / fan_in)
    assert np.abs(ku).max() <= bound and np.abs(ku).max() > 0.99 * bound
    assert abs(ku.std() - bound / math.sqrt(3)) < 0.01 * bound
    kn = np.asarray(nn.init.kaiming_normal(shape, mode="fan_out", nonlinearity="relu", generator=g))
    assert abs(kn.std() / (math.sqrt(2 / fan_out)) - 1) < 0.01 and abs(kn.mean()) < 1e-3
    xu = np.asarray(nn.init.xavier_uniform(shape, generator=g))
    a = math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(xu).max() <= a and abs(xu.std() - a / math.sqrt(3)) < 0.01 * a
    xn = np.asarray(nn.init.xavier_normal(shape, gain=2.0, generator=g))
    assert abs(xn.std() / (2 * math.sqrt(2 / (fan_in + fan_out))) - 1) < 0.01


def test_seeded_initialisation_is_reproducible_and_in_place():
    xo.random_seed(3)
    a = nn.Linear(4, 4)
    xo.random_seed(3)
    b = nn.Linear(4, 4)
    np.testing.assert_array_equal(np.asarray(a.weight), np.asarray(b.weight))
    w = a.weight
    assert nn.init.xavier_uniform_(w, generator=nn.Generator(1)) is w
    np.testing.assert_array_equal(
        np.asarray(w), np.asarray(nn.init.xavier_uniform([4, 4], generator=nn.Generator(1)))
    )
    np.testing.assert_array_equal(np.asarray(nn.init.zeros_(a.bias)), np.zeros(4))
    # two generators with one seed agree whatever else is drawn in between
    g1, g2 = nn.Generator(9), nn.Generator(9)
    xo.rng_uniform(0.0, 1.0, [10])
    np.testing.assert_array_equal(np.asarray(g1.normal([5])), np.asarray(g2.normal([5])))
    u = np.asarray(nn.Generator(0).uniform([10000], -1.0, 1.0, "bf16").tolist())
    assert u.min() >= -1 and u.max() < 1


# ---------------------------------------------------------------------------------------
# Gradients of a small CNN against finite differences (float64)
# ---------------------------------------------------------------------------------------


def _cnn_loss(x, w1, b1, gamma, beta, wd, bd, labels):
    h = F.conv2d(x, w1, b1, padding=1)
    h = F.batch_norm(h, weight=gamma, bias=beta, training=True)
    h = F.max_pool2d(F.relu(h), 2)
    return F.cross_entropy(F.linear(F.flatten(h), wd, bd), labels)


def test_small_cnn_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 4, 4))
    w1 = rng.standard_normal((3, 2, 3, 3)) * 0.5
    b1 = rng.standard_normal(3) * 0.1
    gamma = 1 + 0.1 * rng.standard_normal(3)
    beta = 0.1 * rng.standard_normal(3)
    wd = rng.standard_normal((4, 12)) * 0.3
    bd = rng.standard_normal(4) * 0.1
    labels = xo.tensor([0, 3, 1], "i32")
    check_grads(
        lambda *a: _cnn_loss(*a, labels), [x, w1, b1, gamma, beta, wd, bd], rtol=1e-5, atol=1e-8
    )


def test_module_backward_fills_grads_of_every_parameter():
    m = _cnn()
    loss = F.cross_entropy(m(T(rand(4, 1, 4, 4))), T([0, 1, 2, 0]))
    loss.backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        assert np.isfinite(np.asarray(p.grad)).all()
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


# ---------------------------------------------------------------------------------------
# Against torch.nn (skipped when torch is not installed)
# ---------------------------------------------------------------------------------------


def _to_torch(torch, m_xo, m_torch):
    sd = {k: torch.from_numpy(np.asarray(v).copy()) for k, v in m_xo.state_dict().items()}
    m_torch.load_state_dict(sd)


def test_layers_match_torch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x = rand(2, 4, 7, 6)
    tx = torch.from_numpy(x)
    for kw in [dict(stride=2, padding=1), dict(dilation=2, groups=2), dict(padding="same")]:
        m = nn.Conv2d(4, 6, 3, **kw)
        tm = torch.nn.Conv2d(4, 6, 3, **kw)
        _to_torch(torch, m, tm)
        np.testing.assert_allclose(
            np.asarray(m(T(x))), tm(tx).detach().numpy(), rtol=1e-4, atol=1e-5
        )
    np.testing.assert_array_equal(
        np.asarray(F.max_pool2d(T(x), 3, 2, 1)), tF.max_pool2d(tx, 3, 2, 1).numpy()
    )
    np.testing.assert_allclose(
        np.asarray(F.avg_pool2d(T(x), 3, 2, 1, False)),
        tF.avg_pool2d(tx, 3, 2, 1, count_include_pad=False).numpy(),
        rtol=1e-6,
    )
    for approx in ("none", "tanh"):
        np.testing.assert_allclose(
            np.asarray(F.gelu(T(x), approx)),
            tF.gelu(tx, approximate=approx).numpy(),
            rtol=1e-5,
            atol=1e-6,
        )
    z, y = rand(5, 7), np.array([0, 6, 2, 2, 1])
    np.testing.assert_allclose(
        F.cross_entropy(T(z), T(y), label_smoothing=0.2).item(),
        tF.cross_entropy(torch.from_numpy(z), torch.from_numpy(y), label_smoothing=0.2).item(),
        rtol=1e-5,
    )


def test_batchnorm_matches_torch_in_both_modes():
    torch = pytest.importorskip("torch")
    bn, tbn = nn.BatchNorm2d(3, momentum=0.3), torch.nn.BatchNorm2d(3, momentum=0.3)
    for seed in range(3):
        x = rand(4, 3, 3, 3, seed=seed) * 3 + 2
        np.testing.assert_allclose(
            np.asarray(bn(T(x))), tbn(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5
        )
    for k, v in tbn.state_dict().items():
        np.testing.assert_allclose(np.asarray(bn.state_dict()[k]), v.numpy(), rtol=1e-5)
    bn.eval(), tbn.eval()
    x = rand(2, 3, 2, 2, seed=9)
    np.testing.assert_allclose(
        np.asarray(bn(T(x))), tbn(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_cnn_forward_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    m = _cnn(0)
    tm = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 3),
    )
    _to_torch(torch, m, tm)
    x, y = rand(6, 1, 4, 4, seed=2), np.array([0, 1, 2, 2, 1, 0])
    loss = F.cross_entropy(m(T(x)), T(y))
    tloss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    tparams = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(
            np.asarray(p.grad), tparams[name].grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )


def test_batchnorm_counts_a_batch_before_a_failed_training_forward():
    """As PyTorch's module: num_batches_tracked goes up, then the one-value-per-channel
    check raises; a good batch then counts once more."""
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than one value per channel"):
        bn(xo.tensor(np.ones((1, 3), np.float32)))
    assert int(bn.num_batches_tracked.numpy()) == 1
    bn(xo.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
    assert int(bn.num_batches_tracked.numpy()) == 2
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.15, 0.25, 0.35], rtol=1e-6)
