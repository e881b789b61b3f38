"""xops.numpy's namespace, promotion rules, device objects and the Tensor's everyday
operators and methods (NumPy and PyTorch spellings), checked against NumPy."""

import itertools
import math

import numpy as np
import pytest
from conftest import assert_tensor

import xops as xo
import xops.numpy as xnp
from xops.device import Device

STD = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


# -- dtypes and promotion --------------------------------------------------------------------


def test_dtype_objects_are_the_xops_dtypes():
    assert xnp.float32 is xo.float32 and xnp.bool is xo.bool_ and xnp.uint64 == "ui64"
    assert xnp.float64 == np.float64 and xnp.int8 != xnp.uint8
    assert {xnp.float32: 1}[xo.float32] == 1
    assert xnp.__array_api_version__ == "2024.12"
    assert (xnp.e, xnp.pi, xnp.newaxis) == (np.e, np.pi, None)
    assert np.isinf(xnp.inf) and np.isnan(xnp.nan)


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(STD, 2)))
def test_promotion_table(a, b):
    da, db = getattr(xnp, a), getattr(xnp, b)
    got = xnp.result_type(da, db)
    assert got is xnp.result_type(db, da)
    na, nb = np.dtype(a), np.dtype(b)
    kinds = {na.kind, nb.kind}
    if kinds <= {"i", "u"} or kinds <= {"f", "c"} or "b" in kinds:
        want = np.promote_types(na, nb)  # NumPy 2 within kinds and with bool
    elif "c" in kinds:
        want = na if na.kind == "c" else nb  # int with complex: the complex type
    else:
        want = na if na.kind == "f" else nb  # int with float: the float type (not f64)
    assert got == want, (a, b, got, want)
    x = xnp.ones((2,), dtype=da) if a != "bool" else xnp.asarray([True, False])
    y = xnp.ones((3, 1), dtype=db) if b != "bool" else xnp.asarray([[True]] * 3)
    if "bool" not in (a, b):
        r = x + y
        assert r.dtype == got and r.shape == (3, 2)


def test_weak_python_scalars():
    i8, f16, bf = (
        xnp.asarray([1], dtype=xnp.int8),
        xnp.asarray([1.0], dtype="f16"),
        xnp.asarray([1.0], dtype="bf16"),
    )
    assert (i8 + 1).dtype == "i8" and (i8 * 2.5).dtype == "f32"
    assert (f16 + 1.0).dtype == "f16" and (bf * 2).dtype == "bf16"
    assert (xnp.asarray([1.0], dtype="f64") + 1j).dtype == "c128"
    assert (xnp.asarray([True]) + 1).dtype == "i64"
    assert xnp.result_type(xnp.asarray([1], dtype="ui8"), 300) == "ui8"  # weak: kind only
    with pytest.raises(xo.SpecError, match="out of range"):
        i8 + 300


def test_narrow_types_mix_only_with_themselves():
    bf = xnp.asarray([1.0], dtype="bf16")
    for other in (xnp.asarray([1.0]), xnp.asarray([1], dtype="i4"), np.ones(1, np.float32)):
        with pytest.raises(xo.SpecError, match="xo.convert"):
            bf + other
    assert (bf + bf).dtype == "bf16"
    assert (xnp.asarray([1], dtype="i4") + xnp.asarray([2], dtype="i4")).tolist() == [3]


def test_can_cast_finfo_iinfo_isdtype():
    assert xnp.can_cast(xnp.int8, xnp.int16) and not xnp.can_cast(xnp.int16, xnp.int8)
    assert xnp.can_cast(xnp.float32, xnp.complex128) and not xnp.can_cast(xnp.float64, xnp.float32)
    assert xnp.can_cast(xnp.asarray([1], dtype="ui8"), xnp.int16)
    # the standard's table only: no bool -> number, integer -> float or complex -> float
    # casts, although the layer promotes i8 + f32 -> f32 (array-api-tests test_can_cast)
    assert not xnp.can_cast(xnp.bool, xnp.int8) and not xnp.can_cast(xnp.int8, xnp.float64)
    assert not xnp.can_cast(xnp.uint8, xnp.complex64)
    assert not xnp.can_cast(xnp.complex64, xnp.float64)
    assert not xnp.can_cast(xnp.int64, xnp.uint64) and not xnp.can_cast(xnp.uint64, xnp.int64)
    assert xnp.can_cast(xnp.bool, xnp.bool) and xnp.can_cast(xnp.uint8, xnp.uint64)
    assert xnp.result_type(xnp.int8, xnp.float32) == xnp.float32  # promotion is unchanged
    f = xnp.finfo(xnp.float32)
    assert (f.bits, f.eps, f.max, f.smallest_normal) == (
        32,
        float(np.finfo(np.float32).eps),
        float(np.finfo(np.float32).max),
        float(np.finfo(np.float32).tiny),
    )
    assert xnp.finfo(xnp.complex128).dtype == xnp.float64 and xnp.finfo("bf16").bits == 16
    assert (xnp.iinfo(xnp.uint64).max, xnp.iinfo(xnp.int8).min) == (2**64 - 1, -128)
    assert xnp.isdtype(xnp.int8, "signed integer") and xnp.isdtype(xnp.uint8, "integral")
    assert xnp.isdtype(xnp.complex64, ("bool", "complex floating"))
    assert xnp.isdtype(xnp.float32, "numeric") is True
    with pytest.raises(xo.SpecError, match="finfo"):
        xnp.finfo(xnp.int32)


def test_inspection_namespace():
    info = xnp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_device() == "cpu" and info.devices() == [info.default_device()]
    assert info.default_dtypes() == {
        "real floating": xnp.float32,
        "complex floating": xnp.complex64,
        "integral": xnp.int64,
        "indexing": xnp.int64,
    }
    assert list(info.dtypes(kind="real floating")) == ["float32", "float64"]
    assert len(info.dtypes()) == 13 and "uint8" in info.dtypes(kind="unsigned integer")


# -- devices ---------------------------------------------------------------------------------------


def test_device_objects():
    x = xnp.asarray([1.0])
    assert x.device == "cpu" and str(x.device) == "cpu" and x.device == Device("cpu")
    assert Device("cuda") == "cuda:0" and str(Device("cuda:1")) == "cuda:1"
    assert Device("cuda") != "cpu" and len({Device("cpu"), Device("cpu")}) == 1
    for moved in (x.to_device("cpu"), x.to(x.device)):  # new objects (x[...] = v rebinds x)
        assert moved is not x and moved.tolist() == [1.0] and moved.device == "cpu"
    assert xnp.asarray([1.0], device=x.device).device == x.device
    for bad in ("cuda", Device("cuda:0")):
        with pytest.raises(RuntimeError, match="no CUDA"):
            x.to_device(bad)
        with pytest.raises(RuntimeError, match="no CUDA"):
            xnp.zeros(2, device=bad)
    with pytest.raises(ValueError, match="tpu"):
        x.to_device("tpu")


# -- operators -----------------------------------------------------------------------------------


def test_operators_follow_python_and_numpy():
    a = np.array([7, -7, 7, -7, 0])
    b = np.array([2, 2, -2, -2, 3])
    x, y = xnp.asarray(a), xnp.asarray(b)
    assert_tensor(x // y, a // b, "i64")
    assert_tensor(x % y, a % b, "i64")
    assert_tensor(x / y, (a / b).astype(np.float32), "f32")
    assert_tensor(x**2, a**2, "i64")
    f, g = a.astype(np.float64), b.astype(np.float64)
    for op in (
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__floordiv__",
        "__mod__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__eq__",
        "__ne__",
    ):
        assert_tensor(getattr(xnp.asarray(f), op)(xnp.asarray(g)), getattr(f, op)(g))
        assert_tensor(getattr(xnp.asarray(f), op)(1.5), getattr(f, op)(1.5))
    assert_tensor(2.0 ** xnp.asarray(f), 2.0**f)
    assert_tensor(10 // xnp.asarray(b), 10 // b)
    assert_tensor(10 % xnp.asarray(b), 10 % b)
    assert_tensor(-xnp.asarray(f), -f)
    assert_tensor(+xnp.asarray(f), f)
    assert_tensor(abs(xnp.asarray(a)), abs(a))
    assert_tensor(~xnp.asarray(a), ~a)
    assert_tensor(xnp.asarray(a) >> 1, a >> 1)
    assert_tensor(xnp.asarray(np.uint8([248])) >> 1, np.uint8([124]))
    assert_tensor(xnp.asarray(a) & 3, a & 3)
    assert_tensor(3 | xnp.asarray(a), 3 | a)


def test_operators_mix_numpy_arrays_and_promote():
    x = xnp.asarray([1.0, 2.0])  # f32
    y = np.array([10.0, 20.0])  # f64
    assert_tensor(x + y, np.float32([1, 2]) + y, "f64")
    assert_tensor(y - x, y - np.float32([1, 2]), "f64")
    m = xnp.asarray(np.arange(6.0).reshape(2, 3))
    assert_tensor(m @ np.ones(3), np.arange(6.0).reshape(2, 3) @ np.ones(3), "f64")
    assert_tensor(np.ones((4, 2)) @ m, np.ones((4, 2)) @ np.arange(6.0).reshape(2, 3))
    assert (x == "a") is False and (x != None) is True  # noqa: E711 (the operator itself is tested)


def test_in_place_operators_rebind():
    x = xnp.asarray([1.0, 2.0])
    alias = x
    x += 1
    x *= xnp.asarray([2.0, 3.0])
    x //= 2
    x **= 2
    assert x.tolist() == [4.0, 16.0] and alias.tolist() == [1.0, 2.0]
    i = xnp.asarray([5])
    i %= 3
    i <<= 2
    i |= 1
    assert i.tolist() == [9]
    m = xnp.eye(2)
    m @= xnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert m.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_in_place_operators_keep_type_and_shape():
    """The standard (and NumPy, PyTorch): `a op= b` must not change a's dtype or shape."""
    i = xnp.asarray([1, 2], dtype=xnp.int8)
    with pytest.raises(
        xo.SpecError,
        match=r"add: in-place `a \+= b` cannot change a's "
        r"element type or shape: i8\[2\] \+= f32\[2\] "
        r"gives f32\[2\]",
    ):
        i += xnp.asarray([1.0, 2.0])
    with pytest.raises(xo.SpecError, match=r"divide: .* i8\[2\] /= int gives f32\[2\]"):
        i /= 2
    f = xnp.asarray([1.0, 2.0])
    with pytest.raises(xo.SpecError, match=r"f32\[2\] \*= f32\[2,2\] gives f32\[2,2\]"):
        f *= xnp.ones((2, 2))
    f += xnp.asarray([1, 1], dtype=xnp.int16)  # the promoted type is a's own: allowed
    assert f.dtype == xnp.float32 and f.tolist() == [2.0, 3.0]


def test_operator_signatures_are_positional_only():
    import inspect

    for name in ("__add__", "__radd__", "__eq__", "__matmul__", "__neg__"):
        params = list(inspect.signature(getattr(xo.Tensor, name)).parameters.values())
        assert all(p.kind is p.POSITIONAL_ONLY for p in params), name


def test_spec_ops_stay_strict():
    a, b = xo.tensor([7, -7]), xo.tensor([2, 2])
    assert xo.divide(a, b).tolist() == [3, -3] and xo.remainder(a, b).tolist() == [1, -1]
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):
        xo.add(xo.tensor([1.0]), xo.tensor([1.0], "f64"))
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):
        xo.add(xo.tensor([1.0, 2.0]), xo.tensor([1.0]))


# -- formatting and conversions ----------------------------------------------------------------


def test_format_round_item():
    loss = xnp.asarray(3.14159)
    assert f"{loss:.2f}" == "3.14" and f"{loss}" == str(loss) and f"{xnp.asarray(7):>3d}" == "  7"
    with pytest.raises(TypeError, match="0-d"):
        f"{xnp.asarray([1.0]):.2f}"
    assert round(xnp.asarray(2.5)).item() == 2.0 and round(xnp.asarray(3.5)).item() == 4.0
    assert round(xnp.asarray(2.567, dtype="f64"), 2).item() == pytest.approx(2.57)
    assert xnp.asarray([[1, 2]]).tolist() == [[1, 2]] and xnp.asarray(2.0).item() == 2.0
    assert isinstance(xnp.asarray([1.0]).numpy(), np.ndarray)
    assert xnp.asarray([1.0]).__array_namespace__() is xnp
    with pytest.raises(ValueError, match="2024.12"):
        xnp.asarray([1.0]).__array_namespace__(api_version="2099.01")


# -- methods ---------------------------------------------------------------------------------------

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 7.5


def test_shape_methods_numpy_and_torch_spellings():
    x = xnp.asarray(A)
    assert_tensor(x.reshape(6, 4), A.reshape(6, 4))
    assert_tensor(x.reshape((4, -1)), A.reshape(4, -1))
    assert_tensor(x.view(-1), A.reshape(-1))
    assert_tensor(x.transpose(), A.transpose())  # no args: reversed (NumPy)
    assert_tensor(x.transpose((1, 0, 2)), A.transpose(1, 0, 2))  # tuple: a permutation
    assert_tensor(x.transpose(0, 2), A.swapaxes(0, 2))  # two ints: swap (PyTorch)
    assert_tensor(x.transpose(2, 0, 1), A.transpose(2, 0, 1))  # one int per axis (NumPy)
    assert_tensor(x.permute(2, 0, 1), A.transpose(2, 0, 1))
    assert_tensor(x.T, A.T)
    assert_tensor(x.mT, A.swapaxes(-1, -2))
    assert_tensor(x.flatten(), A.flatten())
    assert_tensor(x.flatten(1), A.reshape(2, 12))
    assert_tensor(x[:, :1].squeeze(), A[:, :1].squeeze())
    assert_tensor(x[:, :1].squeeze(dim=1), A[:, 0])
    assert_tensor(x.expand_dims(0), A[None])
    assert_tensor(x.unsqueeze(-1), A[..., None])


def test_reduction_methods_numpy_and_torch_spellings():
    x = xnp.asarray(A)
    for name in ("sum", "mean", "prod", "max", "min", "std", "var"):
        ref = getattr(A, name)
        assert_tensor(getattr(x, name)(), ref(), exact=False, rtol=1e-12)
        assert_tensor(getattr(x, name)(axis=1), ref(axis=1), exact=False, rtol=1e-12)
        assert_tensor(
            getattr(x, name)(dim=(0, 2), keepdim=True),
            ref(axis=(0, 2), keepdims=True),
            exact=False,
            rtol=1e-12,
        )
    assert_tensor(x.std(ddof=1), A.std(ddof=1), exact=False, rtol=1e-12)
    assert_tensor(x.var(axis=0, correction=1), A.var(axis=0, ddof=1), exact=False, rtol=1e-12)
    assert_tensor(x.argmax(), np.int64(A.argmax()))
    assert_tensor(x.argmin(dim=2), A.argmin(axis=2))
    assert_tensor(x.cumsum(), A.cumsum())
    assert_tensor(x.cumsum(axis=1), A.cumsum(axis=1))
    assert_tensor(xnp.asarray([1, 2], dtype="i8").sum(), np.int64(3), "i64")
    assert_tensor(x.any(axis=0), A.any(axis=0))
    assert_tensor((x > 0).all(), np.bool_((A > 0).all()))


def test_elementwise_and_conversion_methods():
    x = xnp.asarray(A)
    assert_tensor(x.clip(-3, 4), A.clip(-3, 4))
    assert_tensor(x.clamp(min=0), A.clip(0, None))
    assert_tensor(x.astype("f32"), A.astype(np.float32))
    assert_tensor(x.astype(xnp.int16), A.astype(np.int16))
    assert_tensor(x.to(np.float32), A.astype(np.float32))
    assert_tensor(x.abs().sqrt().log(), np.log(np.sqrt(np.abs(A))), exact=False, rtol=1e-12)
    assert_tensor(x.exp(), np.exp(A), exact=False, rtol=1e-12)
    c = xnp.asarray(np.array([1 + 2j, 3 - 1j]))
    assert_tensor(c.conj(), np.array([1 - 2j, 3 + 1j]))
    assert_tensor(c.real, np.array([1.0, 3.0]))
    assert_tensor(c.imag, np.array([2.0, -1.0]))
    y = x.copy()
    assert y is not x and np.asarray(y).ctypes.data != np.asarray(x).ctypes.data
    w = xo.tensor([1.0, 2.0], requires_grad=True)
    (w.copy() * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


# -- creation, conversion and extras -------------------------------------------------------------


def test_asarray_semantics():
    t = xnp.asarray([1.0, 2.0])
    assert t.dtype == "f32" and xnp.asarray([1, 2]).dtype == "i64"
    assert xnp.asarray(t) is t and xnp.asarray(t, copy=True) is not t
    assert xnp.asarray(np.ones(2)).dtype == "f64"
    assert xnp.asarray([1, 2], dtype=xnp.float64).dtype == "f64"
    with pytest.raises(ValueError, match="copy=False"):
        xnp.asarray(np.ones(2), copy=False)
    with pytest.raises(xo.SpecError, match="asarray"):
        xnp.asarray(1.5, dtype=xnp.int32)
    a = xo.tensor(2.0, requires_grad=True)
    b = xo.tensor(3.0, requires_grad=True)
    (xnp.asarray([a, b * a]) ** 2).sum().backward()  # nested tensors: the graph is kept
    assert a.grad.item() == pytest.approx(2 * 2 + 2 * 6 * 3) and b.grad.item() == pytest.approx(24)
    assert xnp.from_dlpack(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]


def test_creation_defaults():
    assert xnp.zeros(3).dtype == "f32" and xnp.arange(3).dtype == "i64"
    assert xnp.arange(0.0, 1.0, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert xnp.full((2,), True).dtype == "i1" and xnp.full((1,), 1j).dtype == "c64"
    assert xnp.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert xnp.array([1, 2]).tolist() == [1, 2]
    with pytest.raises(xo.SpecError, match="does not fit"):
        xnp.full((1,), 300, dtype=xnp.int8)


@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("ii->i", [(3, 3)]),
        ("ii", [(3, 3)]),
        ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
        ("ij,ij->", [(2, 3), (2, 3)]),
        ("i,j->ij", [(2,), (3,)]),
        ("ijk->kji", [(2, 3, 4)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
        ("ij->", [(2, 3)]),
    ],
)
def test_einsum_matches_numpy(spec, shapes):
    rng = np.random.default_rng(1)
    arrs = [rng.standard_normal(s) for s in shapes]
    assert_tensor(
        xnp.einsum(spec, *map(xnp.asarray, arrs)),
        np.einsum(spec, *arrs),
        exact=False,
        rtol=1e-12,
        atol=1e-12,
    )


def test_random_keys_are_explicit_and_deterministic():
    key = xnp.random.key(42)
    k1, k2 = xnp.random.split(key)
    a, b = xnp.random.normal(k1, (2000,)), xnp.random.normal(k1, (2000,))
    assert a.tolist() == b.tolist() and a.dtype == "f32"
    assert xnp.random.normal(k2, (5,)).tolist() != a[:5].tolist()
    assert abs(float(a.mean())) < 0.1 and abs(float(a.std()) - 1) < 0.1
    u = xnp.random.uniform(k2, (1000,), dtype="f64", minval=-1.0, maxval=3.0)
    assert u.dtype == "f64" and -1.0 <= float(u.min()) and float(u.max()) < 3.0
    r = xnp.random.randint(k1, (1000,), 5, 9)
    assert set(r.tolist()) == {5, 6, 7, 8}
    p = xnp.random.permutation(key, 10)
    assert sorted(p.tolist()) == list(range(10))
    assert xnp.random.bernoulli(key, 0.0, (10,)).tolist() == [False] * 10
    with pytest.raises(xo.SpecError, match="key"):
        xnp.random.normal(xnp.asarray([1.0]), (2,))


def test_bad_inputs_raise_spec_errors():
    with pytest.raises(xo.SpecError, match="^sum: axis 3 is out of bounds"):
        xnp.sum(xnp.ones((2, 2)), axis=3)
    with pytest.raises(xo.SpecError, match="^reshape: cannot reshape"):
        xnp.reshape(xnp.ones(4), (3, -1))
    with pytest.raises(xo.SpecError, match="^sin: needs"):
        xnp.sin(xnp.asarray([True]))
    with pytest.raises(xo.SpecError, match="^take: indices"):
        xnp.take(xnp.ones(3), xnp.asarray([5]))
    with pytest.raises(xo.SpecError, match="^linalg|^inv: needs square"):
        xnp.linalg.inv(xnp.ones((2, 3)))
    with pytest.raises(xo.SpecError, match="^max: zero-size"):
        xnp.max(xnp.ones((0,)))
    with pytest.raises(xo.SpecError, match="^stack: arrays must have one shape"):
        xnp.stack([xnp.ones(2), xnp.ones(3)])


def test_standard_corner_cases():
    x = xnp.ones((2, 3))
    with pytest.raises(IndexError):  # out-of-bounds axes are IndexErrors (and SpecErrors)
        xnp.expand_dims(x, axis=4)
    with pytest.raises(xo.SpecError):
        xnp.sum(x, axis=-3)
    assert xnp.clip(x, min=xnp.zeros((4, 1, 3))).shape == (4, 2, 3)  # bounds broadcast
    assert xnp.clip(xnp.asarray([1, 5, 9], dtype=xnp.int8), 2, 300).tolist() == [2, 5, 9]
    assert xnp.arange(2**63 - 3, 2**63 - 1).tolist() == [2**63 - 3, 2**63 - 2]
    assert xnp.arange(2**64 - 2, 2**64, dtype=xnp.uint64).tolist() == [2**64 - 2, 2**64 - 1]
    assert xnp.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    assert xnp.fft.fftn(xnp.ones((2, 4)), s=(-1, 2)).shape == (2, 2)
    assert xnp.fft.irfftn(xnp.ones((2, 3), dtype=xnp.complex64), s=(2, -1)).shape == (2, 4)
    assert xnp.sum(x, axis=()).shape == (2, 3) and xnp.max(x, axis=()).shape == (2, 3)


def _signature_problems(name, ref, fn):
    """Where ``fn``'s signature departs from the reference implementation's: positional
    parameters in order (names where they may be passed by keyword), required vs
    optional, keyword-only parameters present with the same (None or not) default."""
    import inspect

    P = inspect.Parameter
    rs, fs = inspect.signature(ref), inspect.signature(fn)
    positional = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
    rpos = [p for p in rs.parameters.values() if p.kind in positional]
    fpos = [p for p in fs.parameters.values() if p.kind in positional]
    out = []
    for i, p in enumerate(rpos):
        q = fpos[i] if i < len(fpos) else None
        if q is None or (
            p.kind is P.POSITIONAL_OR_KEYWORD and (q.name, q.kind) != (p.name, p.kind)
        ):
            out.append(f"{name}: positional parameter {i} ({p.name})")
    for p in rs.parameters.values():
        q = fs.parameters.get(p.name)
        if p.kind is P.KEYWORD_ONLY and (
            q is None or q.kind not in (P.KEYWORD_ONLY, P.POSITIONAL_OR_KEYWORD)
        ):
            out.append(f"{name}: keyword-only {p.name}")
        if p.kind is P.VAR_POSITIONAL and not any(
            q.kind is P.VAR_POSITIONAL for q in fs.parameters.values()
        ):
            out.append(f"{name}: *{p.name}")
    return out


def test_signatures_follow_the_standard():
    import inspect

    strict = pytest.importorskip("array_api_strict")
    strict.set_array_api_strict_flags(api_version="2024.12")
    problems = []
    for ref_mod, mod in ((strict, xnp), (strict.linalg, xnp.linalg), (strict.fft, xnp.fft)):
        ext = ref_mod.__name__.rsplit(".", 1)[-1] if ref_mod is not strict else ""
        for name in dir(ref_mod):
            ref = getattr(ref_mod, name)
            if name.startswith("_") or not inspect.isfunction(ref) or "flags" in name:
                continue
            if not ref.__module__.endswith(ext):
                continue  # helpers the reference imports into its extension modules
            if not hasattr(mod, name):
                problems.append(f"missing {name}")
                continue
            problems += _signature_problems(name, ref, getattr(mod, name))
    arr = type(strict.asarray(0))
    for name in (
        "__add__",
        "__radd__",
        "__matmul__",
        "__eq__",
        "__pow__",
        "__array_namespace__",
        "__floordiv__",
        "__mod__",
        "__lshift__",
        "__rshift__",
        "__and__",
        "__xor__",
    ):
        problems += _signature_problems(name, getattr(arr, name), getattr(xo.Tensor, name))
    assert problems == []


def test_sign_zero_and_real_imag_of_real_arrays():
    """2024.12: sign(-0.0) is 0 (NumPy's +0, not the spec op's -0); real/imag/conj take
    any numeric array (a real array is its own real part; its imaginary part is 0)."""
    got = np.asarray(xnp.sign(xnp.asarray([-0.0, 0.0, -3.5, 2.0, np.nan], dtype=xnp.float64)))
    np.testing.assert_array_equal(got, [0.0, 0.0, -1.0, 1.0, np.nan])
    assert not np.signbit(got[:2]).any()
    assert np.asarray(xnp.sign(xnp.asarray([-0.0], dtype=xnp.float32))).tolist() == [0.0]
    x = xnp.asarray([3, -4], dtype=xnp.int8)
    for fn, want in ((xnp.real, [3, -4]), (xnp.imag, [0, 0]), (xnp.conj, [3, -4])):
        out = fn(x)
        assert out.dtype == xnp.int8 and out.tolist() == want
    assert xnp.real(xnp.asarray([1.5])).tolist() == [1.5]
    assert xnp.imag(xnp.asarray([1.5], dtype=xnp.float64)).dtype == xnp.float64


def test_floor_divide_infinities_follow_the_standard():
    """+-inf // finite is an infinity and finite // inf of the other sign is -0 (the
    standard's special cases; NumPy and Python give NaN and -1 there)."""
    inf = math.inf
    a = [inf, inf, -inf, -inf, 2.5, -2.5, 2.5, -2.5, 7.0, -7.0, inf]
    b = [2.0, -2.0, 2.0, -2.0, -inf, inf, inf, -inf, 2.0, 2.0, inf]
    want = [inf, -inf, -inf, inf, -0.0, -0.0, 0.0, 0.0, 3.0, -4.0, math.nan]
    for dt in (xnp.float32, xnp.float64):
        x, y = xnp.asarray(a, dtype=dt), xnp.asarray(b, dtype=dt)
        for got in (xnp.floor_divide(x, y), x // y):
            g = np.asarray(got)
            assert got.dtype == dt
            np.testing.assert_array_equal(g, want)
            assert np.signbit(g[:-1]).tolist() == [math.copysign(1, w) < 0 for w in want[:-1]]
    assert np.asarray(xnp.asarray(inf) // 2).tolist() == inf


def test_vector_norm_inf_of_an_empty_vector_is_zero():
    z = xnp.zeros((0, 2), dtype=xnp.float64)
    for axis in (0, None, (0, 1)):
        got = xnp.linalg.vector_norm(z, axis=axis, ord=math.inf)
        want = np.linalg.vector_norm(np.zeros((0, 2)), axis=axis, ord=np.inf)
        assert got.dtype == xnp.float64 and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
    x = xnp.asarray([[1.0, -3.0], [2.0, 0.5]])
    assert xnp.linalg.vector_norm(x, axis=1, ord=math.inf).tolist() == [3.0, 2.0]


def test_boolean_mask_with_an_empty_axis_selects_nothing():
    """As NumPy (and array-api-tests' test_getitem_masking): a mask whose axis has size 0
    selects no element; any other size mismatch is an IndexError."""
    x = xnp.reshape(xnp.arange(6), (2, 3))
    a = np.arange(6).reshape(2, 3)
    for shape in ((2, 0), (0,), (0, 3), (0, 0)):
        got = x[xnp.zeros(shape, dtype=xnp.bool)]
        assert got.shape == a[np.zeros(shape, bool)].shape and got.dtype == xnp.int64
    y = xnp.asarray(x, copy=True)
    y[xnp.zeros((2, 0), dtype=xnp.bool)] = 9
    assert y.tolist() == a.tolist()
    with pytest.raises(IndexError, match="did not match"):
        x[xnp.asarray([True, False, True])]


# -- found by the array API standard's own suite (data-apis/array-api-tests) ---------------


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "uint32", "int64", "float32"])
def test_vecdot_keeps_the_promoted_type_and_wraps(name):
    """No widening to the default integer (sum's rule): the operands' promoted type, whose
    products and sums wrap, as NumPy's vecdot on that type."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 100, (3, 5)).astype(name)
    b = rng.integers(0, 100, (3, 5)).astype(name)
    got = xnp.vecdot(xnp.asarray(a), xnp.asarray(b))
    assert got.dtype == getattr(xnp, name)
    np.testing.assert_array_equal(np.asarray(got), np.vecdot(a, b))


def test_vecdot_broadcasts_every_dim_but_the_vectors_axis():
    a, b = np.arange(6.0).reshape(2, 1, 3), np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(
        np.asarray(xnp.vecdot(xnp.asarray(a), xnp.asarray(b))), np.vecdot(a, b)
    )
    x = np.array([1 + 2j, 3j, -1.0])
    y = np.array([1j, 1.0, 2 - 1j])
    np.testing.assert_array_equal(
        np.asarray(xnp.vecdot(xnp.asarray(x), xnp.asarray(y))),
        np.vecdot(x, y),  # conj(x)
    )
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(
        np.asarray(xnp.vecdot(xnp.asarray(m), xnp.asarray(m), axis=0)), np.vecdot(m, m, axis=0)
    )
    with pytest.raises(xo.SpecError, match="same size along axis"):  # (no broadcasting there)
        xnp.vecdot(xnp.asarray([1.0, 2.0, 3.0]), xnp.asarray([2.0]))
    with pytest.raises(xo.SpecError, match="axis"):
        xnp.vecdot(xnp.ones((2, 3)), xnp.ones(3), axis=1)  # (ranks differ: -1 .. -1)


def test_repeat_takes_one_count_for_all():
    x = xnp.asarray([1, 2, 3], dtype=xnp.int8)
    assert_tensor(xnp.repeat(x, xnp.asarray([2])), [1, 1, 2, 2, 3, 3], "i8")
    m = xnp.asarray([[1, 2], [3, 4]])
    assert_tensor(xnp.repeat(m, xnp.asarray([2]), axis=1), np.repeat([[1, 2], [3, 4]], 2, 1))
    assert xnp.repeat(xnp.zeros((0,)), xnp.asarray([3])).shape == (0,)
    assert xnp.repeat(xnp.zeros((0,)), xnp.asarray([], dtype=xnp.uint64)).shape == (0,)
    counts = xnp.asarray([1, 0, 2], dtype=xnp.uint64)
    assert_tensor(xnp.repeat(x, counts), [1, 3, 3], "i8")
    with pytest.raises(xo.SpecError, match="1 or 3 entries"):
        xnp.repeat(x, xnp.asarray([1, 2]))
    with pytest.raises(xo.SpecError, match="resource limit"):  # (before allocating)
        xnp.repeat(x, xnp.asarray([2**62, 2**62, 1]))


def test_max_dimensions_is_the_rank_limit_and_past_it_a_spec_error():
    assert xnp.__array_namespace_info__().capabilities()["max dimensions"] == 64
    assert xnp.zeros((1,) * 64).ndim == 64
    for make in (
        lambda: xnp.zeros((1,) * 65),
        lambda: xnp.full((1,) * 65, 2.0),
        lambda: xnp.reshape(xnp.zeros(1), (1,) * 65),
        lambda: xo.reshape(xo.tensor([1.0]), [1] * 65),
        lambda: xo.broadcast_in_dim(xo.tensor(1.0), [], [1] * 65),
    ):
        with pytest.raises(xo.SpecError, match="64"):
            make()


def test_sign_of_complex_zeros_is_plus_zero():
    z = [complex(-0.0, -0.0), complex(-0.0, 0.0), complex(0.0, -0.0), complex(3, 4)]
    got = np.asarray(xnp.sign(xnp.asarray(z, dtype=xnp.complex128)))
    assert not np.signbit(got[:3].real).any() and not np.signbit(got[:3].imag).any()
    np.testing.assert_array_equal(got[:3], [0, 0, 0])
    np.testing.assert_array_equal(got[3], np.asarray(xo.sign(xo.tensor(3 + 4j, "c128"))))


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_expm1_complex_special_cases(dt):
    """The standard's table (exp(z) - 1 with C99 Annex G's cexp where a part is infinite or
    NaN; a zero real part +0), conj-symmetric; finite values as the spec op."""
    inf, nan = math.inf, math.nan
    cases = [  # (input, expected) with None for a part whose sign the standard leaves open
        (complex(-0.0, 0.0), (0.0, 0.0)),
        (complex(0.0, -0.0), (0.0, -0.0)),
        (complex(1.0, inf), (nan, nan)),
        (complex(1.0, nan), (nan, nan)),
        (complex(inf, 0.0), (inf, 0.0)),
        (complex(-inf, 2.0), (-1.0, 0.0)),
        (complex(-inf, -2.0), (-1.0, -0.0)),
        (complex(-inf, inf), (-1.0, None)),
        (complex(inf, inf), (None, nan)),
        (complex(-inf, nan), (-1.0, None)),
        (complex(inf, nan), (None, nan)),
        (complex(nan, 0.0), (nan, 0.0)),
        (complex(nan, 1.0), (nan, nan)),
    ]
    got = np.asarray(xnp.expm1(xnp.asarray([c for c, _ in cases], dtype=getattr(xnp, dt))))
    for (c, (re, im)), g in zip(cases, got):
        for want, part in ((re, g.real), (im, g.imag)):
            if want is None:
                assert math.isinf(part) or part == 0, (c, g)
            elif math.isnan(want):
                assert math.isnan(part), (c, g)
            else:
                assert part == want and math.copysign(1, part) == math.copysign(1, want), (c, g)
    assert abs(got[4].real) == inf and abs(got[8].real) == inf  # (+-inf parts)
    x = np.array([1e-5 + 2e-5j, 1 + 2j, -3 - 0.5j], getattr(np, dt))
    np.testing.assert_array_equal(
        np.asarray(xnp.expm1(xnp.asarray(x))), np.asarray(xo.exponential_minus_one(xo.tensor(x)))
    )
