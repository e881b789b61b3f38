"""DLPack both ways (NumPy, PyTorch; bf16 and f8 too) and NumPy's ufunc / function
protocols on tensors: results are Tensors on the tape, or a clear TypeError."""

import numpy as np
import pytest
from conftest import assert_tensor

import xops as xo
import xops.numpy as xnp


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _sum(t):
    return xo.reduce(t, xo.tensor(0, t.dtype), list(range(t.ndim)), xo.add)


# -- DLPack --------------------------------------------------------------------------------


def test_numpy_shares_memory_read_only():
    t = xo.tensor([[1.0, 2.0], [3.0, 4.0]])
    ptr = np.asarray(t).ctypes.data
    n = np.from_dlpack(t)
    assert n.ctypes.data == ptr and not n.flags.writeable  # DLPack 1.x: flagged read-only
    assert n.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert t.__dlpack_device__() == (1, 0)
    # a DLPack 0.x consumer (no max_version) still gets the buffer, without the flag
    assert type(t.__dlpack__()).__name__ == "PyCapsule"
    assert np.from_dlpack(t, copy=True).flags.writeable


def test_torch_shares_memory(torch):
    t = xo.tensor([[1.0, 2.0], [3.0, 4.0]])
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == np.asarray(t).ctypes.data and tt.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    "dt,tdt",
    [
        ("bf16", "bfloat16"),
        ("f8E4M3FN", "float8_e4m3fn"),
        ("f8E5M2", "float8_e5m2"),
        ("f16", "float16"),
        ("i1", "bool"),
        ("ui8", "uint8"),
        ("c64", "complex64"),
    ],
)
def test_dlpack_element_types_round_trip(dt, tdt, torch):
    vals = [1.5, -2.0, 0.25] if dt not in ("i1", "ui8") else [1, 0, 1]
    t = xo.tensor(vals, dt)
    out = torch.from_dlpack(t)
    assert out.dtype == getattr(torch, tdt)
    assert out.to(torch.complex128 if dt == "c64" else torch.float64).tolist() == [
        complex(v) if dt == "c64" else float(v) for v in vals
    ]
    back = xnp.from_dlpack(out)
    assert back.dtype == t.dtype and back.tolist() == t.tolist()


def test_from_dlpack_takes_numpy():
    a = np.arange(6.0).reshape(2, 3)
    t = xnp.from_dlpack(a)
    assert_tensor(t, a, "f64")
    assert np.shares_memory(np.asarray(t), a)  # zero-copy, as the standard says
    c = xnp.from_dlpack(a, copy=True)
    assert not np.shares_memory(np.asarray(c), a)
    with pytest.raises(TypeError, match="__dlpack__"):
        xnp.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="no DLPack element type"):
        xo.tensor([1, 2], "i4").__dlpack__()


def test_from_dlpack_takes_torch(torch):
    s = xnp.from_dlpack(torch.arange(10, dtype=torch.int32)[::2])  # strided: made row-major
    assert s.tolist() == [0, 2, 4, 6, 8] and s.dtype == xo.int32
    b = xnp.from_dlpack(torch.tensor([1.0, 2.5], dtype=torch.bfloat16))
    assert b.dtype == xo.bfloat16 and b.tolist() == [1.0, 2.5]


# -- NumPy ufuncs --------------------------------------------------------------------------


def test_ufuncs_return_tensors_on_the_tape():
    x = xo.tensor([0.5, 1.0, 2.0], requires_grad=True)
    for fn, ref in [
        (np.sin, np.sin),
        (np.exp, np.exp),
        (np.sqrt, np.sqrt),
        (np.abs, np.abs),
        (np.arctan, np.arctan),
        (np.square, np.square),
    ]:
        y = fn(x)
        assert isinstance(y, xo.Tensor) and y.requires_grad
        np.testing.assert_allclose(
            np.asarray(y), ref(np.array([0.5, 1.0, 2.0], np.float32)), rtol=1e-6
        )
    _sum(np.sin(x) * np.add(x, 1)).backward()  # d/dx sin(x)(x+1) = cos(x)(x+1) + sin(x)
    v = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(x.grad), np.cos(v) * (v + 1) + np.sin(v), rtol=1e-6)
    u = xo.tensor([1.0, 0.0, 3.0])
    assert np.maximum(x, u).tolist() == [1.0, 1.0, 3.0]
    assert np.add.reduce(u).item() == 4.0 and np.add.accumulate(u).tolist() == [1, 1, 4]
    assert np.maximum.reduce(u).item() == 3.0


def test_ndarray_operators_with_tensors():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    t = xo.tensor([10.0, 20.0, 30.0])
    for got, want in [
        (a + t, a + 30 - [20, 10, 0]),
        (a * t, [10, 40, 90]),
        (a - t, [-9, -18, -27]),
        (a @ t, 140.0),
    ]:
        assert isinstance(got, xo.Tensor)
        np.testing.assert_allclose(np.asarray(got), want)
    assert (a < t).tolist() == [True, True, True]
    b = np.zeros(3, np.float32)
    b += t  # out= a NumPy array: the values are written there
    assert b.tolist() == [10.0, 20.0, 30.0]


def test_unsupported_ufuncs_point_to_xnp():
    t = xo.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="xops.numpy"):
        np.heaviside(t, t)
    with pytest.raises(TypeError, match="xops.numpy"):
        np.add.outer(t, t)
    np.testing.assert_array_equal(np.asarray(np.fmax(t, xo.tensor([np.nan, 3.0]))), [1.0, 3.0])
    with pytest.raises(TypeError, match="immutable"):
        np.sin(t, out=t)
    with pytest.raises(TypeError, match="where="):
        np.sin(t, where=np.array([True, False]))
    with pytest.raises(TypeError, match="requires a gradient"):
        np.sin(xo.tensor([1.0], requires_grad=True), out=np.zeros(1, np.float32))


# -- NumPy functions -----------------------------------------------------------------------


def test_array_functions_map_to_xnp():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    t = xo.tensor(a)
    checks = [
        (np.mean(t), np.mean(a)),
        (np.mean(t, axis=0), np.mean(a, axis=0)),
        (np.sum(t, 1, keepdims=True), np.sum(a, 1, keepdims=True)),
        (np.concatenate([t, t], axis=1), np.concatenate([a, a], axis=1)),
        (np.stack([t, t]), np.stack([a, a])),
        (np.where(t > 2, t, 0.0), np.where(a > 2, a, 0)),
        (np.reshape(t, (3, 2)), np.reshape(a, (3, 2))),
        (np.transpose(t), a.T),
        (np.std(t, ddof=1), np.std(a, ddof=1)),
        (np.var(t, axis=1), np.var(a, axis=1)),
        (np.max(t), a.max()),
        (np.argmax(t, axis=1), np.argmax(a, axis=1)),
        (np.clip(t, 1, 4), np.clip(a, 1, 4)),
        (np.cumsum(t), np.cumsum(a)),
        (np.squeeze(t[None]), a),
        (np.expand_dims(t, 0), a[None]),
        (np.sort(t[:, ::-1], axis=1), np.sort(a[:, ::-1], axis=1)),
        (np.flip(t), np.flip(a)),
        (np.prod(t + 1), np.prod(a + 1)),
        (np.dot(t, t.T if hasattr(t, "T") else a.T), a @ a.T),
        (np.linalg.norm(t), np.linalg.norm(a)),
        (np.linalg.norm(t, axis=1), np.linalg.norm(a, axis=1)),
        (np.linalg.norm(t, "nuc"), np.linalg.norm(a, "nuc")),
        (np.unique(t % 3), np.unique(a % 3)),
        (
            np.linalg.inv(t[:, :2] + np.eye(2, dtype=np.float32)),
            np.linalg.inv(a[:, :2] + np.eye(2, dtype=np.float32)),
        ),
    ]
    for got, want in checks:
        assert isinstance(got, xo.Tensor), got
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    assert np.allclose(t, a) and np.shape(t) == (2, 3) and np.array_equal(t, a)


def test_array_functions_record_gradients():
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = np.mean(np.stack([x * x, x]))  # mean of [x^2, x]: d/dx = (2x + 1) / 6
    y.backward()
    np.testing.assert_allclose(np.asarray(x.grad), (2 * np.array([1, 2, 3]) + 1) / 6, rtol=1e-6)


def test_unsupported_functions_point_to_xnp():
    t = xo.tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"np\.convolve.*xops\.numpy"):
        np.convolve(t, t)
    assert isinstance(np.median(t), xo.Tensor)  # (NumPy's names beyond the standard)
    with pytest.raises(TypeError, match="out="):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(TypeError, match="decimals"):
        np.round(t, 2)
    assert isinstance(np.asarray(t), np.ndarray)  # __array__ still works
