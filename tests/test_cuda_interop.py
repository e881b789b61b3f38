"""DLPack and ``__cuda_array_interface__`` for CUDA tensors, both ways
(``xops/kernels/cuda/interop.py``).

Under numba's CUDA simulator "device memory" is host memory, so the capsules xops builds
are read back with ctypes (layout, type codes, strides, deleter) and imported again
through ``xnp.from_dlpack``, sharing memory. The capsule layout is also checked against
real consumers without a GPU: PyTorch and NumPy take a CPU capsule built by the same
code. The PyTorch-CUDA test runs where torch sees a GPU (the lead's GPU run).
"""

import ctypes
import gc
import weakref

import numpy as np
import pytest

import xops as xo
import xops.numpy as xnp
from cuda_support import SIM, cu, needs_cuda
from xops import _dlpack as abi
from xops.kernels.cuda import interop

pytestmark = needs_cuda

CODES = {  # element type -> (DLPack type code, bits)
    "f32": (2, 32),
    "f64": (2, 64),
    "f16": (2, 16),
    "si8": (0, 8),
    "si64": (0, 64),
    "ui16": (1, 16),
    "i1": (6, 8),
    "bf16": (4, 16),
    "f8E4M3FN": (10, 8),
    "f8E5M2": (12, 8),
    "c64": (5, 64),
}
DATA = [[1, 0, 3], [4, 5, 1]]


class _Producer:
    """A DLPack producer handing out one prepared capsule."""

    def __init__(self, capsule, device=(abi.CUDA, 0)):
        self.capsule, self.device, self.asked = capsule, device, None

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked = {"stream": stream, "max_version": max_version}
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class _Interface:
    """An object with only ``__cuda_array_interface__`` (as numba's device arrays)."""

    def __init__(self, desc):
        self.__cuda_array_interface__ = desc


def _bits(t):
    return t.numpy().view(np.uint8)


def _address(t):
    return interop._pointer(t._value)


def test_cuda_array_interface_describes_the_device_memory():
    for dt, typestr in (("f32", "<f4"), ("si8", "|i1"), ("ui16", "<u2"), ("i1", "|b1")):
        t = cu(DATA, dt)
        d = t.__cuda_array_interface__
        assert d["shape"] == (2, 3) and d["typestr"] == typestr and d["version"] == 3
        assert d["strides"] is None and d["data"] == (_address(t), False) and d["data"][0]
        assert d["stream"] == (None if SIM else 1)
    assert cu(2.5).__cuda_array_interface__["shape"] == ()
    for dt in ("bf16", "f8E4M3FN", "i4"):
        t = cu(DATA, dt)
        with pytest.raises(AttributeError, match=rf"{dt}\[2,3\] has no typestr.*DLPack"):
            _ = t.__cuda_array_interface__
        assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="lives on the CPU"):
        _ = xo.tensor([1.0]).__cuda_array_interface__


@pytest.mark.parametrize("dt", sorted(CODES))
def test_dlpack_capsule_layout_and_round_trip(dt):
    t = cu(DATA, dt)
    assert t.__dlpack_device__() == (2, 0)
    before = interop.live_exports()
    capsule = t.__dlpack__()
    assert abi.capsule_name(capsule) == b"dltensor"
    m, versioned = abi.managed(capsule)
    dl = m.dl_tensor
    assert not versioned and m.deleter and dl.byte_offset == 0
    assert (dl.device.device_type, dl.device.device_id) == (2, 0)
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == CODES[dt] + (1,)
    assert dl.ndim == 2 and [dl.shape[i] for i in range(2)] == [2, 3]
    assert [dl.strides[i] for i in range(2)] == [3, 1]
    assert dl.data == _address(t)
    del m, dl
    assert interop.live_exports() == before + 1
    u = xnp.from_dlpack(_Producer(capsule))
    assert abi.capsule_name(capsule) == b"used_dltensor"  # consumed
    assert u.device == "cuda:0" and u.dtype == t.dtype and u.shape == (2, 3)
    assert _address(u) == _address(t)  # the same memory, no copy
    np.testing.assert_array_equal(_bits(u), _bits(t))
    del capsule
    gc.collect()
    assert interop.live_exports() == before + 1  # held until the consumer lets go
    del u
    gc.collect()
    assert interop.live_exports() == before


def test_dlpack_zero_d_and_empty_tensors():
    s = cu(2.5, "f64")
    u = xnp.from_dlpack(_Producer(s.__dlpack__()))
    assert u.shape == () and u.item() == 2.5 and _address(u) == _address(s)
    e = xo.tensor(np.zeros((0, 3), np.float32), device="cuda")
    v = xnp.from_dlpack(_Producer(e.__dlpack__()))
    assert v.shape == (0, 3) and v.device == "cuda:0"


def test_an_unconsumed_capsule_frees_its_export():
    gc.collect()
    before = interop.live_exports()
    capsule = cu(DATA, "f32").__dlpack__()
    assert interop.live_exports() == before + 1
    del capsule
    gc.collect()
    assert interop.live_exports() == before


def test_dlpack_export_arguments():
    t = cu(DATA, "f32")
    for stream in (None, -1, 1, 2):
        capsule = t.__dlpack__(stream=stream, max_version=(1, 1))
        assert abi.capsule_name(capsule) == b"dltensor"
    with pytest.raises(BufferError, match="stream=0 is ambiguous"):
        t.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="stream must be None or an int"):
        t.__dlpack__(stream="s")
    with pytest.raises(BufferError, match=r"lives on cuda:0 .*cannot export to device \(1, 0\)"):
        t.__dlpack__(dl_device=(1, 0))
    assert abi.capsule_name(t.__dlpack__(dl_device=(2, 0))) == b"dltensor"
    with pytest.raises(BufferError, match=r"i4\[2,3\] has no DLPack element type"):
        cu(DATA, "i4").__dlpack__()
    c = xnp.from_dlpack(_Producer(t.__dlpack__(copy=True)))
    assert _address(c) != _address(t)
    np.testing.assert_array_equal(c.numpy(), t.numpy())
    with pytest.raises(BufferError, match=r"lives on the CPU.*cannot export to device \(2, 0\)"):
        xo.tensor([1.0]).__dlpack__(dl_device=(2, 0))


def test_from_dlpack_asks_for_the_default_stream_and_checks_the_capsule():
    t = cu(DATA, "si32")
    p = _Producer(t.__dlpack__())
    xnp.from_dlpack(p)
    assert p.asked == {"stream": None if SIM else 1, "max_version": (1, 0)}
    with pytest.raises(BufferError, match="CUDA device 1; xops uses one CUDA device"):
        xnp.from_dlpack(_Producer(t.__dlpack__(), device=(2, 1)))
    capsule = t.__dlpack__()
    dl = abi.dl_tensor(capsule)
    dl.dtype.lanes = 4
    with pytest.raises(BufferError, match=r"\(code 0, bits 32, lanes 4\) has no xops"):
        xnp.from_dlpack(_Producer(capsule))
    assert abi.capsule_name(capsule) == b"dltensor"  # refused: not consumed
    dl.dtype.lanes = 1
    dl.strides[0], dl.strides[1] = 1, 2  # column-major: a copy, made row-major on the device
    with pytest.raises(BufferError, match=r"strides \(1, 2\) in elements\) is not row-major"):
        xnp.from_dlpack(_Producer(capsule), copy=False)
    assert abi.capsule_name(capsule) == b"dltensor"  # refused: not consumed
    flat = np.asarray(DATA, np.int32).ravel()
    c = xnp.from_dlpack(_Producer(capsule))
    want = [[flat[i + 2 * j] for j in range(dl.shape[1])] for i in range(dl.shape[0])]
    assert c.dtype == xo.int32 and c.tolist() == want and _address(c) != _address(t)
    assert abi.capsule_name(capsule) == b"used_dltensor"
    with pytest.raises(BufferError, match="already consumed"):
        used = t.__dlpack__()
        xnp.from_dlpack(_Producer(used))
        xnp.from_dlpack(_Producer(used))


def test_from_dlpack_takes_a_cuda_array_interface_and_shares_memory():
    t = cu([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    producer = _Interface(t.__cuda_array_interface__)
    alive = weakref.ref(producer)
    u = xnp.from_dlpack(producer)
    assert u.device == "cuda:0" and u.dtype == xo.float32 and _address(u) == _address(t)
    del producer
    gc.collect()
    assert alive() is not None  # kept alive by the tensor
    if SIM:  # write through the (simulated) device memory: the import sees it
        cells = (ctypes.c_float * 6).from_address(_address(t))
        cells[4] = 50.0
        assert u.tolist() == [[1.0, 2.0, 3.0], [4.0, 50.0, 6.0]]
    w = u + 1.0  # the kernels run on it
    np.testing.assert_array_equal(w.numpy(), t.numpy() + 1)
    c = xnp.from_dlpack(_Interface(t.__cuda_array_interface__), copy=True)
    assert _address(c) != _address(t)
    del u, w
    gc.collect()
    assert alive() is None
    desc = dict(t.__cuda_array_interface__, strides=(4, 8))  # (i, j) at element i + 2 j
    with pytest.raises(BufferError, match=r"strides \(4, 8\) in bytes\) is not row-major"):
        xnp.from_dlpack(_Interface(desc), copy=False)
    s = xnp.from_dlpack(_Interface(desc))  # a row-major copy on the device
    v = t.numpy()
    flat = v.ravel()
    assert s.tolist() == [[flat[i + 2 * j] for j in range(3)] for i in range(2)]
    assert _address(s) != _address(t)
    back = dict(desc, data=(_address(t) + 12, False), strides=(-12, 4))  # rows reversed
    assert xnp.from_dlpack(_Interface(back)).tolist() == v[::-1].tolist()
    with pytest.raises(BufferError, match="not multiples of the element size 4"):
        xnp.from_dlpack(_Interface(dict(desc, strides=(12, 2))))
    with pytest.raises(BufferError, match="typestr '<M8' has no xops element type"):
        xnp.from_dlpack(_Interface(dict(t.__cuda_array_interface__, typestr="<M8")))
    with pytest.raises(BufferError, match="masked"):
        xnp.from_dlpack(_Interface(dict(t.__cuda_array_interface__, mask=object())))


def test_from_dlpack_device_argument_moves_explicitly():
    g = xnp.from_dlpack(np.arange(3.0), device="cuda")
    assert g.device == "cuda:0" and g.tolist() == [0.0, 1.0, 2.0]
    t = cu(DATA, "si16")
    h = xnp.from_dlpack(t, device="cpu")
    assert h.device == "cpu" and h.tolist() == DATA
    assert xnp.from_dlpack(t, device="cuda").device == "cuda:0"
    with pytest.raises(BufferError, match="copy=False, but the data lives on cuda:0"):
        xnp.from_dlpack(t, device="cpu", copy=False)
    c = xnp.from_dlpack(t, copy=True)
    assert c.device == "cuda:0" and _address(c) != _address(t) and c.tolist() == DATA


def test_capsule_layout_against_torch_and_numpy_on_the_cpu():
    """The capsule builder, aimed at host memory, read by real consumers."""
    torch = pytest.importorskip("torch")
    gc.collect()
    before = interop.live_exports()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = torch.from_dlpack(interop.export_capsule(a.ctypes.data, a.shape, 2, 32, abi.CPU, a))
    assert x.tolist() == a.tolist() and x.data_ptr() == a.ctypes.data
    assert interop.live_exports() == before + 1
    del x
    gc.collect()
    assert interop.live_exports() == before  # torch called the deleter
    b = np.array([1, 0, 1], np.uint8)
    assert torch.from_dlpack(
        interop.export_capsule(b.ctypes.data, b.shape, 6, 8, abi.CPU, b)
    ).tolist() == [True, False, True]
    h = np.array([1.0, 2.5], np.float32)
    hb = xo.tensor(h, "bf16").numpy()
    out = torch.from_dlpack(interop.export_capsule(hb.ctypes.data, hb.shape, 4, 16, abi.CPU, hb))
    assert out.dtype == torch.bfloat16 and out.float().tolist() == [1.0, 2.5]
    n = np.from_dlpack(
        _Producer(interop.export_capsule(a.ctypes.data, a.shape, 2, 32, abi.CPU, a), (1, 0))
    )
    np.testing.assert_array_equal(n, a)
    del n, out
    gc.collect()
    assert interop.live_exports() == before


@pytest.mark.skipif(not SIM, reason="relabels host memory as CUDA: the simulator only")
def test_versioned_capsule_of_a_foreign_producer():
    torch = pytest.importorskip("torch")
    tt = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    capsule = tt.__dlpack__(max_version=(1, 0))
    assert abi.capsule_name(capsule) == b"dltensor_versioned"
    abi.dl_tensor(capsule).device.device_type = abi.CUDA  # "device memory" is host memory
    u = xnp.from_dlpack(_Producer(capsule))
    assert abi.capsule_name(capsule) == b"used_dltensor_versioned"
    assert u.tolist() == tt.tolist() and _address(u) == tt.data_ptr()
    tt.add_(1)  # the producer writes: the import shares its memory
    assert u.tolist() == tt.tolist()


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if SIM or not torch.cuda.is_available():
        pytest.skip("needs PyTorch with a CUDA GPU")
    return torch


def test_torch_cuda_both_ways():
    torch = _torch_cuda()
    # torch -> xops: no copy, the producer's writes show, the kernels run on it
    tt = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    x = xnp.from_dlpack(tt)
    assert x.device == "cuda:0" and x.dtype == xo.float32
    assert x.__cuda_array_interface__["data"][0] == tt.data_ptr()
    tt.add_(1)
    torch.cuda.synchronize()
    assert x.tolist() == tt.tolist()
    np.testing.assert_allclose((x * 2.0).numpy(), (tt * 2).cpu().numpy())
    xb = xnp.from_dlpack(tt.to(torch.bfloat16))
    assert xb.dtype == xo.bfloat16 and xb.tolist() == tt.tolist()
    xs = xnp.from_dlpack(tt.t().contiguous())
    assert xs.tolist() == tt.t().tolist()
    assert xnp.from_dlpack(tt.t()).tolist() == tt.t().tolist()  # (a copy: row-major)
    with pytest.raises(BufferError, match="not row-major"):
        xnp.from_dlpack(tt.t(), copy=False)
    xi = xnp.from_dlpack(_Interface(tt.__cuda_array_interface__))
    assert _address(xi) == tt.data_ptr()
    # xops -> torch: DLPack and the interface, no copy; the export outlives the tensor
    gc.collect()
    before = interop.live_exports()
    t = cu([[1.5, 2.0], [3.0, 4.0]])
    u = torch.from_dlpack(t)
    assert u.device.type == "cuda" and u.dtype == torch.float32
    assert u.data_ptr() == t.__cuda_array_interface__["data"][0]
    v = torch.as_tensor(t, device="cuda")
    assert v.data_ptr() == u.data_ptr()
    del t
    gc.collect()
    assert u.tolist() == [[1.5, 2.0], [3.0, 4.0]] and interop.live_exports() == before + 1
    del u
    gc.collect()
    assert interop.live_exports() == before
    for dt, tdt in (("bf16", torch.bfloat16), ("i1", torch.bool), ("si8", torch.int8)):
        w = torch.from_dlpack(cu(DATA, dt))
        assert w.dtype == tdt and w.cpu().to(torch.float32).tolist() == cu(DATA, dt).tolist()
