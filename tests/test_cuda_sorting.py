"""CUDA kernels of sort and top_k (xops/kernels/cuda/sorting.py), each result compared with the CPU
op's bit for bit (NaN payloads and the order of equal keys included): every recognised
comparator (default, LT / GT with FLOAT or TOTALORDER compare), NaNs of both signs and
signed zeros, integer extremes and ties, 1-byte key types (table keys), passengers of
other types, dims first / middle / last, rows long enough for several merge levels, and
the same SpecError labels for bad input; top_k over the same keys (totalOrder, both
orders, ties in index order). Tiny shapes: the simulator runs a Python thread
per CUDA thread."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo

import test_sort
from conftest import raises_spec

pytestmark = needs_cuda

NAN = np.float64(np.nan)
NEG_NAN = -np.abs(NAN)
PAYLOAD = np.array([0x7FF0000000000123], np.uint64).view(np.float64)[0]  # a signalling NaN
FLOATS = np.array(
    [1.5, -0.0, 0.0, NAN, -np.inf, np.inf, -1.5, 1.5, 0.0, -0.0, 2.0, NEG_NAN, PAYLOAD, -7.0]
)


def _bits(t):
    a = t.numpy()
    return a.reshape(-1).view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))


def _exact(dev, ref):
    assert dev.device == "cuda:0" and ref.device == "cpu"
    assert dev.dtype == ref.dtype and dev.shape == ref.shape, (dev, ref)
    np.testing.assert_array_equal(_bits(dev), _bits(ref))


def _both(inputs, dimension=-1, is_stable=False, comparator=None):
    """sort on CUDA copies and on the CPU; the results equal bit for bit. Returns the CPU
    result."""
    seq = isinstance(inputs, (list, tuple))
    xs = list(inputs) if seq else [inputs]
    dev = xo.sort(
        [x.to("cuda") for x in xs] if seq else xs[0].to("cuda"), dimension, is_stable, comparator
    )
    ref = xo.sort(inputs, dimension, is_stable, comparator)
    for d, r in zip(dev if seq else [dev], ref if seq else [ref]):
        _exact(d, r)
    return ref


def _lt(a, b):
    return xo.compare(a, b, "LT")


def _gt(a, b):
    return xo.compare(a, b, "GT")


COMPARATORS = {
    "default": None,
    "LT": _lt,
    "GT": _gt,
    "LT FLOAT": lambda a, b: xo.compare(a, b, "LT", "FLOAT"),
    "LT TOTALORDER": lambda a, b: xo.compare(a, b, "LT", "TOTALORDER"),
    "GT TOTALORDER": lambda a, b: xo.compare(
        a, b, comparison_direction="GT", compare_type="TOTALORDER"
    ),
}

rng = np.random.default_rng(17)


def _floats(shape, dtype):
    """FLOATS repeated to the size of ``shape`` and shuffled (every special value is in
    each tensor of at least 14 elements, NaN in those of 4)."""
    n = int(np.prod(shape))
    v = np.random.default_rng(n).permutation(np.resize(FLOATS, n)).reshape(shape)
    t = xo.tensor(v, "f64")
    return t if dtype == "f64" else xo.convert(t, dtype)


@pytest.mark.parametrize("name", sorted(COMPARATORS))
def test_float_keys_nans_signed_zeros(name):
    cmp = COMPARATORS[name]
    for dtype in ("f32", "f64", "bf16", "f16"):
        for shape, dim in (((13,), 0), ((3, 6), 0), ((2, 5, 3), 1)):
            x = _floats(shape, dtype)
            ref = _both(x, dim, False, cmp)
            if name == "LT" and len(shape) == 1:  # FLOAT compare: every NaN after +inf
                v = xo.convert(ref, "f64").numpy()
                k = int(np.isnan(v).sum())
                assert k and np.isnan(v[len(v) - k :]).all()


@pytest.mark.parametrize("dtype", ["i32", "ui8", "i4", "i1", "i64", "ui64", "i16"])
def test_integer_keys_ties_and_extremes(dtype):
    info = xo.tensor(0, dtype).dtype
    lo = -8 if dtype == "i4" else (0 if dtype[0] != "i" or dtype == "i1" else -100)
    hi = 1 if dtype == "i1" else 7
    v = rng.integers(lo, hi + 1, 40).astype(np.int64)
    if dtype in ("i64", "ui64"):  # the extremes of 64-bit keys
        ext = [np.iinfo(np.int64).min, np.iinfo(np.int64).max] if dtype == "i64" else [0]
        v[:2] = ext[0], ext[-1]
    x = xo.tensor(v.astype(bool) if dtype == "i1" else v.tolist(), dtype)
    if dtype == "ui64":
        x = xo.tensor(np.concatenate([[2**64 - 1, 2**63], v[2:].astype(np.uint64)]), "ui64")
    assert x.dtype == info
    for cmp in (None, _lt, _gt):
        for shape, dim in (((40,), 0), ((5, 8), 1), ((4, 10), 0)):
            _both(xo.reshape(x, shape), dim, True, cmp)


def test_one_byte_float_keys():
    for dtype in ("f8E4M3FNUZ", "f8E4M3FN", "f8E5M2", "f8E8M0FNU"):
        x = _floats((3, 7), dtype) if dtype != "f8E8M0FNU" else None
        if x is None:  # no sign, no zero: powers of two and NaN
            x = xo.tensor(np.array([[0.25, 4.0, NAN, 1.0, 0.25, 2.0, 1.0]] * 3), "f8E8M0FNU")
        for cmp in (None, _lt, _gt, COMPARATORS["GT TOTALORDER"]):
            _both(x, 1, False, cmp)


def test_passengers_of_every_kind():
    x = xo.tensor(rng.integers(-3, 4, (4, 9)).tolist(), "i32")
    passengers = [
        xo.tensor(np.arange(36).reshape(4, 9), "i64"),
        _floats((4, 9), "f32"),
        _floats((4, 9), "bf16"),
        xo.tensor(rng.integers(0, 2, (4, 9)).astype(bool)),
        xo.tensor((np.arange(36) + 1j * np.arange(36)[::-1]).reshape(4, 9), "c128"),
        xo.tensor(rng.integers(-8, 8, (4, 9)).tolist(), "i4"),
    ]

    def lt4(*args):  # 2n parameters: compare on the first operand
        return xo.compare(args[0], args[1], "LT")

    def gt7(a, b, c, d, e, f, g, h, i, j, k, l, m, n):  # noqa: E741
        return xo.compare(a, b, "GT")

    for dim in (0, 1, -1):
        _both([x, passengers[0]], dim, True, lambda a, b, c, d: xo.compare(a, b, "LT"))
        _both([x] + passengers, dim, False, gt7)
        _both([_floats((4, 9), "f64"), passengers[0]], dim, False, None)
    assert lt4  # (the variadic form is not recognised: see test_unrecognised_comparator)


def test_long_rows_several_merge_levels_stable_and_not():
    # 37 per row: runs of 8, merged at widths 8, 16 and 32 (the last run has no partner
    # at width 8 and 16's odd levels); few distinct keys, so ties everywhere
    x = xo.tensor(rng.integers(0, 5, (3, 37)).tolist(), "i32")
    iota = xo.tensor(np.tile(np.arange(37), (3, 1)), "i32")
    for stable in (False, True):
        for cmp in (
            lambda a, b, c, d: xo.compare(a, b, "LT"),
            lambda a, b, c, d: xo.compare(a, b, "GT"),
        ):
            keys, order = _both([x, iota], 1, stable, cmp)
            k, o = keys.numpy(), order.numpy()
            for r in range(3):  # equal keys keep their order: a stable sort
                for key in set(k[r].tolist()):
                    assert (np.diff(o[r][k[r] == key]) > 0).all()
    f = _floats((37, 2), "f32")
    _both(f, 0, False, None)


def test_sizes_zero_and_one():
    for shape, dim in (((0,), 0), ((2, 0), 0), ((2, 0), 1), ((1,), 0), ((3, 1), 1)):
        x = xo.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
        _both([x, x], dim, False, None)


def _to_cuda(inputs):
    if isinstance(inputs, list):
        return [_to_cuda(x) for x in inputs]
    return cu(inputs) if isinstance(inputs, np.ndarray) else inputs


@pytest.mark.parametrize("label,case", test_sort.SORT_BAD + [("C5", (test_sort.X, 0, False, 3))])
def test_constraint_errors_match_the_cpu(label, case):
    """test_sort's table of bad calls, on CUDA tensors: the same labels."""
    inputs, dim, stable, cmp = case
    with raises_spec("sort", label):
        xo.sort(_to_cuda(inputs), dim, stable, cmp)
    with raises_spec("sort", label):
        xo.sort(inputs, dim, stable, cmp)


def test_any_comparator_and_complex_keys_run_the_generic_merge_sort():
    # the CPU's merge sort in xops ops on the device (xops/kernels/cuda/sorting.py,
    # _sort_generic): the same permutation as the CPU, bit for bit, for comparators the
    # kernel does not take: on other values than the first operand's, several statements,
    # swapped operands, a non-strict LE (not a strict weak order: the CPU's permutation
    # too), complex keys; rows of 1..17 elements (odd runs at several levels), any dim
    rng = np.random.default_rng(8)

    def two_statements(a, b):
        c = xo.compare(xo.abs(a), xo.abs(b), "LT")
        return c

    def by_passenger(a, b, i, j):  # the second operand decides
        return xo.compare(i, j, "GT")

    comparators = (
        two_statements,
        lambda a, b: xo.compare(b, a, "LT"),
        lambda a, b: xo.compare(a, b, "LE"),
    )
    for shape, dim in (((3, 13), 1), ((13, 3), 0), ((2, 7, 5), 1), ((17,), 0), ((2, 1), 1)):
        x = rng.integers(-4, 5, shape).astype(np.float32)
        x.reshape(-1)[1] = np.nan
        for cmp in comparators:
            dev = xo.sort(cu(x), dim, True, cmp)
            assert dev.device == "cuda:0"
            np.testing.assert_array_equal(_bits(dev), _bits(xo.sort(xo.tensor(x), dim, True, cmp)))
        tag = rng.integers(0, 3, shape).astype(np.int32)
        dev = xo.sort([cu(x), cu(tag)], dim, True, by_passenger)
        ref = xo.sort([xo.tensor(x), xo.tensor(tag)], dim, True, by_passenger)
        for d, r in zip(dev, ref):
            np.testing.assert_array_equal(_bits(d), _bits(r))
    z = (rng.integers(-2, 3, 11) + 1j * rng.integers(-2, 3, 11)).astype(np.complex64)
    z[3] = complex(np.nan, 1.0)
    for cmp in (None, _lt):
        dev, ref = xo.sort(cu(z, "c64"), 0, True, cmp), xo.sort(xo.tensor(z), 0, True, cmp)
        np.testing.assert_array_equal(dev.numpy().view(np.uint32), ref.numpy().view(np.uint32))
    x = cu([3.0, 1.0, 2.0])
    with pytest.raises(xo.SpecError, match=r"^sort \(device\): operands live on different"):
        xo.sort([x, np.zeros(3, np.float32)], 0, False, lambda a, b, c, d: xo.compare(a, b, "LT"))


def test_gradient_on_cuda_tensors():  # (more cases: tests/test_cuda_grad.py)
    def loss(t):
        w = xo.tensor([1.0, 2.0, 3.0]).to(t.device)
        return xo.reduce(xo.sort(t) * w, 0.0, [0], xo.add)

    g = xo.grad(loss)(cu([3.0, 1.0, 2.0]))
    assert g.device == "cuda:0"
    np.testing.assert_array_equal(g.numpy(), xo.grad(loss)(xo.tensor([3.0, 1.0, 2.0])).numpy())


# -- top_k (the same key and merge kernels, then the first k of each row) ----------------


def _top_k_both(x, k, largest):
    dev = xo.top_k(x.to("cuda"), k, largest)
    ref = xo.top_k(x, k, largest)
    for d, r in zip(dev, ref):
        _exact(d, r)
    return ref


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f8E5M2"])
def test_top_k_float_keys_nans_signed_zeros_ties(dtype):
    for shape in ((14,), (3, 2, 14), (2, 37)):
        x = _floats(shape, dtype)
        for k in (0, 1, 5, shape[-1]):
            for largest in (True, False):
                _top_k_both(x, k, largest)


@pytest.mark.parametrize("dtype", ["i1", "i8", "ui8", "i32", "ui64", "i4"])
def test_top_k_integer_keys_ties_and_extremes(dtype):
    info = xo.tensor(0, dtype).dtype
    lo, hi = (0, 1) if dtype == "i1" else (int(info.min), int(info.max))
    v = rng.integers(lo, hi, (3, 11), endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)
    v[0, :3] = lo
    v[1, -3:] = hi
    x = xo.tensor(v.astype(bool) if dtype == "i1" else v, dtype)
    for k in (1, 4, 11):
        _top_k_both(x, k, True)
        _top_k_both(x, k, False)
    ref = _top_k_both(xo.tensor([[5, 1, 5, 7, 5]], dtype if dtype != "i1" else "i8"), 3, True)
    assert ref[1].tolist() == [[3, 0, 2]]  # equal values in index order


def test_top_k_sizes_and_errors_match_the_cpu():
    for shape, k in (((1,), 1), ((4, 1), 0), ((0, 3), 2), ((2, 0), 0)):
        x = xo.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
        _top_k_both(x, k, True)
    x = cu([[1.0, 2.0, 3.0]])
    for label, args in (
        ("I1", (cu(1.0), 1, True)),
        ("I2", (x, 4, True)),
        ("I2", (x, -1, True)),
        ("I3", (x, 1, "yes")),
        ("I1", (cu([1 + 1j, 0j], "c64"), 1, True)),
    ):
        with raises_spec("top_k", label):
            xo.top_k(*args)
        with raises_spec("top_k", label):
            xo.top_k(args[0].to("cpu"), *args[1:])


def test_top_k_gradient_on_cuda_tensors():
    def loss(t):
        w = xo.tensor([[1.0, 2.0], [3.0, 4.0]]).to(t.device)
        return xo.reduce(xo.top_k(t, 2)[0] * w, 0.0, [0, 1], xo.add)

    x = [[3.0, 1.0, 2.0], [0.5, 4.0, 4.0]]
    g = xo.grad(loss)(cu(x))
    assert g.device == "cuda:0"
    np.testing.assert_array_equal(g.numpy(), xo.grad(loss)(xo.tensor(x)).numpy())


def test_gradient_of_a_sort_by_any_comparator_on_the_device():
    x = np.array([3.0, -1.0, 2.0, -5.0, 0.5, -0.5], np.float32)
    w = np.arange(6, dtype=np.float32)

    def loss(t):
        s = xo.sort(t, 0, True, lambda a, b: xo.compare(xo.abs(a), xo.abs(b), "LT"))
        return xo.reduce(s * xo.tensor(w).to(t.device), 0.0, [0], xo.add)

    dev = xo.grad(loss)(cu(x))
    assert dev.device == "cuda:0"
    np.testing.assert_array_equal(dev.numpy(), xo.grad(loss)(xo.tensor(x)).numpy())
