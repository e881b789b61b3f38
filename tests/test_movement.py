"""Data-movement ops: spec examples, naive spec-shaped references over a shape zoo and
every element type (bit-exact), clamping, one negative test per constraint label, and
hypothesis properties."""

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xops as xo
from conftest import SHAPES, assert_tensor, bits, raises_spec

DTYPES = xo.all_dtypes()
IDS = [d.name for d in DTYPES]


# ---------------------------------------------------------------------------------------
# Helpers: random holder data of any element type, bit-exact comparison
# ---------------------------------------------------------------------------------------


def sample(dt, shape, seed=0):
    """Random holder data of element type ``dt``: random bit patterns (NaN payloads,
    signed zeros and all) where every pattern is a value, random in-range values else."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt.kind in ("si", "ui") and dt.bits < 8:
        return rng.integers(dt.min, dt.max + 1, shape).astype(np.int64).astype(dt.np)
    if dt.kind == "float" and dt.bits < 8:
        return rng.integers(0, 1 << dt.bits, shape).astype(np.uint8).view(dt.np)
    raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
    return raw.view(dt.np).reshape(shape)


def tensor_of(a, dt):
    return xo.tensor(a, dt)


def assert_bits(t, want, dt):
    """``t`` is a read-only tensor of ``dt`` whose holder bits equal ``want``'s."""
    assert isinstance(t, xo.Tensor)
    assert t.dtype is dt, f"{t.dtype} != {dt}"
    got = np.asarray(t)
    want = np.asarray(want)
    assert got.dtype == dt.np
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert not got.flags.writeable
    if got.size:
        assert np.array_equal(bits(got), bits(want.astype(dt.np)))


# ---------------------------------------------------------------------------------------
# Naive, spec-shaped references (index by index, spec variable names)
# ---------------------------------------------------------------------------------------


def ref_transpose(operand, permutation):
    result = np.empty([operand.shape[p] for p in permutation], operand.dtype)
    for result_index in np.ndindex(*result.shape):
        operand_index = [0] * operand.ndim
        for d, p in enumerate(permutation):
            operand_index[p] = result_index[d]
        result[result_index] = operand[tuple(operand_index)]
    return result


def ref_slice(operand, start_indices, limit_indices, strides):
    shape = [-(-(lim - s) // st) for s, lim, st in zip(start_indices, limit_indices, strides)]
    result = np.empty(shape, operand.dtype)
    for result_index in np.ndindex(*shape):
        operand_index = [s + i * st for s, i, st in zip(start_indices, result_index, strides)]
        result[result_index] = operand[tuple(operand_index)]
    return result


def ref_pad(operand, padding_value, low, high, interior):
    shape = [
        lo + n + max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(operand.shape, low, high, interior)
    ]
    result = np.empty(shape, operand.dtype)
    result[...] = padding_value
    for operand_index in np.ndindex(*operand.shape):
        result_index = [lo + i * (it + 1) for lo, i, it in zip(low, operand_index, interior)]
        if all(0 <= r < n for r, n in zip(result_index, shape)):
            result[tuple(result_index)] = operand[operand_index]
    return result


def ref_broadcast_in_dim(operand, broadcast_dimensions, shape):
    result = np.empty(shape, operand.dtype)
    for result_index in np.ndindex(*shape):
        operand_index = [
            0 if operand.shape[d] == 1 else result_index[broadcast_dimensions[d]]
            for d in range(operand.ndim)
        ]
        result[result_index] = operand[tuple(operand_index)]
    return result


def ref_dynamic_slice(operand, start_indices, slice_sizes):
    adjusted = [
        min(max(0, s), n - size) for s, n, size in zip(start_indices, operand.shape, slice_sizes)
    ]
    result = np.empty(slice_sizes, operand.dtype)
    for result_index in np.ndindex(*slice_sizes):
        result[result_index] = operand[tuple(a + i for a, i in zip(adjusted, result_index))]
    return result


def ref_dynamic_update_slice(operand, update, start_indices):
    adjusted = [
        min(max(0, s), n - u) for s, n, u in zip(start_indices, operand.shape, update.shape)
    ]
    result = np.empty(operand.shape, operand.dtype)
    for result_index in np.ndindex(*operand.shape):
        update_index = tuple(r - a for r, a in zip(result_index, adjusted))
        if all(0 <= u < n for u, n in zip(update_index, update.shape)):
            result[result_index] = update[update_index]
        else:
            result[result_index] = operand[result_index]
    return result


def ref_reverse(operand, dimensions):
    result = np.empty(operand.shape, operand.dtype)
    for result_index in np.ndindex(*operand.shape):
        operand_index = [
            n - i - 1 if d in dimensions else i
            for d, (i, n) in enumerate(zip(result_index, operand.shape))
        ]
        result[result_index] = operand[tuple(operand_index)]
    return result


def ref_concatenate(inputs, dimension):
    shape = list(inputs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in inputs)
    result = np.empty(shape, inputs[0].dtype)
    offset = 0
    for x in inputs:
        for index in np.ndindex(*x.shape):
            r = list(index)
            r[dimension] += offset
            result[tuple(r)] = x[index]
        offset += x.shape[dimension]
    return result


# ---------------------------------------------------------------------------------------
# Every example of the spec (seed 004) for these ops, and the XLA seed (002) examples
# ---------------------------------------------------------------------------------------


def test_spec_broadcast_in_dim():
    operand = xo.tensor([[1, 2, 3]], "i32")
    result = xo.broadcast_in_dim(operand, [2, 1], [2, 3, 2])
    assert_tensor(result, [[[1, 1], [2, 2], [3, 3]], [[1, 1], [2, 2], [3, 3]]], "i32")


def test_spec_concatenate():
    result = xo.concatenate(
        [xo.tensor([[1, 2], [3, 4], [5, 6]], "i64"), xo.tensor([[7, 8]], "i64")], 0
    )
    assert_tensor(result, [[1, 2], [3, 4], [5, 6], [7, 8]], "i64")


def test_spec_constant():
    assert_tensor(xo.constant([[0.0, 1.0], [2.0, 3.0]], "f32"), [[0.0, 1.0], [2.0, 3.0]], "f32")


def test_spec_dynamic_slice():
    operand = xo.tensor([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], "i32")
    result = xo.dynamic_slice(operand, [xo.tensor(-1, "i64"), xo.tensor(3, "i64")], [2, 2])
    assert_tensor(result, [[1, 1], [1, 1]], "i32")


def test_spec_dynamic_update_slice():
    operand = xo.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]], "i32")
    update = xo.tensor([[1, 1], [1, 1]], "i32")
    result = xo.dynamic_update_slice(operand, update, [xo.tensor(-1, "i64"), xo.tensor(3, "i64")])
    assert_tensor(result, np.ones((4, 4)), "i32")


def test_spec_get_dimension_size():
    result = xo.get_dimension_size(xo.tensor([[1, 2, 3], [4, 5, 6]], "i64"), 1)
    assert_tensor(result, np.int32(3), "i32")
    assert result.shape == ()


def test_spec_iota():
    assert_tensor(xo.iota(0, [4, 5], "i32"), [[i] * 5 for i in range(4)], "i32")
    assert_tensor(xo.iota(1, [4, 5], "i32"), [list(range(5))] * 4, "i32")


def test_spec_pad():
    operand = xo.tensor([[1, 2, 3], [4, 5, 6]], "i32")
    result = xo.pad(operand, xo.tensor(0, "i32"), [0, 1], [2, 1], [1, 2])
    assert_tensor(
        result,
        [
            [0, 1, 0, 0, 2, 0, 0, 3, 0],
            [0, 0, 0, 0, 0, 0, 0, 0, 0],
            [0, 4, 0, 0, 5, 0, 0, 6, 0],
            [0, 0, 0, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0, 0, 0, 0, 0],
        ],
        "i32",
    )


def test_spec_reshape():
    result = xo.reshape(xo.tensor([[1, 2, 3], [4, 5, 6]], "i32"), [3, 2])
    assert_tensor(result, [[1, 2], [3, 4], [5, 6]], "i32")


def test_spec_reverse():
    result = xo.reverse(xo.tensor([[1, 2], [3, 4], [5, 6]], "i32"), [1])
    assert_tensor(result, [[2, 1], [4, 3], [6, 5]], "i32")


def test_spec_slice():
    operand = xo.tensor([[0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]], "i64")
    result = xo.slice(operand, [1, 2], [3, 4], [1, 1])
    assert_tensor(result, [[1, 1], [1, 1]], "i64")


def test_spec_transpose():
    operand = xo.tensor([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]], "i32")
    result = xo.transpose(operand, [2, 1, 0])
    assert_tensor(result, [[[1, 7], [3, 9], [5, 11]], [[2, 8], [4, 10], [6, 12]]], "i32")


V24 = [
    [[10, 11, 12], [15, 16, 17]],
    [[20, 21, 22], [25, 26, 27]],
    [[30, 31, 32], [35, 36, 37]],
    [[40, 41, 42], [45, 46, 47]],
]


def test_xla_reshape_examples():
    v = xo.tensor(V24, "f32")
    flat = np.array(V24).reshape(-1)
    assert_tensor(xo.reshape(v, [24], [0, 1, 2]), flat)
    assert_tensor(xo.reshape(v, [8, 3], [0, 1, 2]), flat.reshape(8, 3))
    v021 = [
        10,
        20,
        30,
        40,
        11,
        21,
        31,
        41,
        12,
        22,
        32,
        42,
        15,
        25,
        35,
        45,
        16,
        26,
        36,
        46,
        17,
        27,
        37,
        47,
    ]
    assert_tensor(xo.reshape(v, [24], [1, 2, 0]), v021)
    assert_tensor(xo.reshape(v, [8, 3], [1, 2, 0]), np.reshape(v021, (8, 3)))
    assert_tensor(xo.reshape(v, [2, 6, 2], [1, 2, 0]), np.reshape(v021, (2, 6, 2)))
    assert_tensor(xo.reshape(xo.tensor([[5.0]]), []), np.float32(5))
    assert_tensor(xo.reshape(xo.tensor(5.0), [1, 1]), [[5.0]])


def test_xla_collapse_examples():
    # seed 002 prints the {0,1} and {1,2} results swapped (a known XLA docs slip); its
    # text ("replaced by one dim of their product, at their place") gives these:
    v = xo.tensor(V24, "f32")
    flat = np.array(V24, np.float32).reshape(-1)
    assert_tensor(xo.collapse(v, [0, 1, 2]), flat)
    assert_tensor(xo.collapse(v, [0, 1]), flat.reshape(8, 3))
    assert_tensor(xo.collapse(v, [1, 2]), flat.reshape(4, 6))
    assert_tensor(xo.collapse(v, []), np.array(V24))
    assert_tensor(xo.collapse(v, [1]), np.array(V24))


def test_xla_broadcast_example():
    assert_tensor(xo.broadcast(xo.tensor(2.0), [2, 3]), np.full((2, 3), 2.0), "f32")
    x = xo.tensor([1, 2, 3], "i8")
    assert_tensor(xo.broadcast(x, [2]), [[1, 2, 3], [1, 2, 3]], "i8")
    assert xo.broadcast(x, []).shape == (3,)


def test_xla_set_dimension_size_example():
    v = xo.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "f32")
    five = xo.set_dimension_size(v, xo.tensor(5, "i32"), 0)
    assert float(np.sum(np.asarray(five))) == 1 + 2 + 3 + 4 + 5
    assert float(np.prod(np.asarray(five))) == 1 * 2 * 3 * 4 * 5
    six = xo.set_dimension_size(v, 6, 0)
    assert float(np.sum(np.asarray(six))) == 21
    m = xo.tensor(np.arange(12).reshape(3, 4), "i32")
    assert_tensor(xo.set_dimension_size(m, 2, 1), np.arange(12).reshape(3, 4)[:, :2])
    assert xo.set_dimension_size(m, 0, 0).shape == (0, 4)
    assert xo.set_dimension_size(m, 3, 0).shape == (3, 4)


# ---------------------------------------------------------------------------------------
# Every element type x the shape zoo, against the naive references (bit-exact)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_transpose_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        for perm in itertools.permutations(range(len(shape))):
            assert_bits(xo.transpose(tensor_of(a, dt), list(perm)), ref_transpose(a, perm), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_reshape_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        assert_bits(xo.reshape(x, [a.size]), a.reshape(-1), dt)
        assert_bits(xo.reshape(x, list(shape[::-1])), a.reshape(shape[::-1]), dt)
        assert_bits(xo.reshape(x, [1, *shape, 1]), a.reshape((1, *shape, 1)), dt)
        perm = list(range(len(shape)))[::-1]
        assert_bits(xo.reshape(x, [a.size], perm), ref_transpose(a, perm).reshape(-1), dt)
        if len(shape) >= 2:
            dims = [0, 1]
            n = shape[0] * shape[1]
            assert_bits(xo.collapse(x, dims), a.reshape((n, *shape[2:])), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_slice_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        for stride in (1, 2, 3):
            start = [min(1, n) for n in shape]
            limit = list(shape)
            step = [stride] * len(shape)
            assert_bits(xo.slice(x, start, limit, step), ref_slice(a, start, limit, step), dt)
        empty = [n // 2 for n in shape]
        assert_bits(xo.slice(x, empty, empty), ref_slice(a, empty, empty, [1] * len(shape)), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_pad_all_dtypes(dt):
    pv = sample(dt, (), 99)
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        r = len(shape)
        for low, high, interior in [
            ([1] * r, [2] * r, [0] * r),
            ([0] * r, [1] * r, [2] * r),
            ([-1] * r, [1] * r, [1] * r),
            ([2] * r, [-1] * r, [1] * r),
            ([0] * r, [0] * r, [0] * r),
        ]:
            if any(
                lo + n + max(n - 1, 0) * it + hi < 0
                for n, lo, hi, it in zip(shape, low, high, interior)
            ):
                continue
            want = ref_pad(a, pv, low, high, interior)
            assert_bits(xo.pad(x, tensor_of(pv, dt), low, high, interior), want, dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_broadcast_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        r = len(shape)
        out = (2, *shape)
        bd = list(range(1, r + 1))
        assert_bits(xo.broadcast_in_dim(x, bd, out), ref_broadcast_in_dim(a, bd, out), dt)
        assert_bits(xo.broadcast(x, [2]), ref_broadcast_in_dim(a, bd, out), dt)
        # reversed mapping with an extra trailing dim: also transposes
        out2 = (*shape[::-1], 3)
        bd2 = list(range(r))[::-1]
        assert_bits(xo.broadcast_in_dim(x, bd2, out2), ref_broadcast_in_dim(a, bd2, out2), dt)
        # size-1 operand dims expand
        if a.size:
            ones = a.reshape(-1)[:1].reshape((1,) * r)
            want_shape = tuple(n + 2 for n in shape)
            got = xo.broadcast_in_dim(tensor_of(ones, dt), list(range(r)), want_shape)
            assert_bits(got, ref_broadcast_in_dim(ones, list(range(r)), want_shape), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_dynamic_slice_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        sizes = [max(n - 1, 0) for n in shape]
        for s in (-3, 0, 1, 7):
            starts = [s] * len(shape)
            assert_bits(xo.dynamic_slice(x, starts, sizes), ref_dynamic_slice(a, starts, sizes), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_dynamic_update_slice_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        u = sample(dt, tuple(max(n - 1, 0) for n in shape), k + 50)
        for s in (-3, 0, 1, 7):
            starts = [xo.tensor(s, "i32")] * len(shape)
            got = xo.dynamic_update_slice(tensor_of(a, dt), tensor_of(u, dt), starts)
            assert_bits(got, ref_dynamic_update_slice(a, u, [s] * len(shape)), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_concatenate_reverse_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        x = tensor_of(a, dt)
        for dims in itertools.chain.from_iterable(
            itertools.combinations(range(len(shape)), m) for m in range(len(shape) + 1)
        ):
            assert_bits(xo.reverse(x, list(dims)), ref_reverse(a, dims), dt)
        for d in range(len(shape)):
            b_shape = list(shape)
            b_shape[d] = 2
            b = sample(dt, tuple(b_shape), k + 7)
            got = xo.concatenate([x, tensor_of(b, dt), x], d)
            assert_bits(got, ref_concatenate([a, b, a], d), dt)
        if shape:
            assert_bits(xo.concatenate((x,), 0), a, dt)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_constant_dimension_size_all_dtypes(dt):
    for k, shape in enumerate(SHAPES):
        a = sample(dt, shape, k)
        assert_bits(xo.constant(a), a, dt)
        assert_bits(xo.constant(a, dt.name), a, dt)
        x = xo.constant(tensor_of(a, dt), dt)
        assert_bits(x, a, dt)
        for d, n in enumerate(shape):
            assert_tensor(xo.get_dimension_size(x, d), np.int32(n), "i32")
            head = a[(slice(None),) * d + (slice(0, n // 2),)]
            assert_bits(xo.set_dimension_size(x, n // 2, d), head, dt)


@pytest.mark.parametrize(
    "dt", [d for d in DTYPES if d.kind != "bool"], ids=[d.name for d in DTYPES if d.kind != "bool"]
)
def test_iota_all_dtypes(dt):
    for shape in [(1,), (5,), (2, 3), (0,), (3, 0, 2), (1, 1, 4)]:
        if dt.kind in ("si", "ui"):  # i2 counts to 1 at most, ui2/i4 to 3
            shape = tuple(min(n, dt.max + 1) for n in shape)
        for d, n in enumerate(shape):
            if dt.kind == "float":
                line = np.arange(n, dtype=np.float32).astype(dt.np)  # small ints: exact
            else:
                line = np.arange(n).astype(np.int64).astype(dt.np)
            view = [1] * len(shape)
            view[d] = n
            want = np.broadcast_to(line.reshape(view), shape)
            assert_bits(xo.iota(d, list(shape), dt), want, dt)


# ---------------------------------------------------------------------------------------
# Op-specific semantics
# ---------------------------------------------------------------------------------------


def test_iota_float_is_converted_integer_iota():
    # bf16 has 8 significand bits: 257 rounds (to even) to 256, 259 to 260
    got = np.asarray(xo.iota(0, [300], "bf16")).astype(np.float64)
    assert np.array_equal(
        got, np.arange(300, dtype=np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)
    )
    assert got[257] == 256 and got[259] == 260
    # f8E4M3FN has no infinity: 464 (a tie) rounds to even 448, anything above is NaN
    f8 = np.asarray(xo.iota(0, [500], "f8E4M3FN")).astype(np.float32)
    assert f8[448] == 448 and f8[464] == 448 and np.isnan(f8[465]) and np.isnan(f8[480])
    assert_tensor(xo.iota(0, [3], "c128"), [0j, 1 + 0j, 2 + 0j], "c128")
    assert_tensor(xo.iota(0, [2, 2]), [[0, 0], [1, 1]], "i64")  # default i64
    assert_tensor(xo.iota(0, [16], "ui4"), np.arange(16), "ui4")


def test_iota_attributes_as_tensors_and_arrays():
    assert_tensor(xo.iota(xo.tensor(1), xo.tensor([2, 2]), xo.int8), [[0, 1], [0, 1]], "i8")
    assert_tensor(xo.iota(np.int64(0), np.array([3]), np.int16), [0, 1, 2], "i16")


def test_constant_literals():
    assert_tensor(xo.constant(1.5), np.float32(1.5), "f32")
    assert_tensor(xo.constant(3), np.int64(3), "i64")
    assert_tensor(xo.constant([True, False]), [True, False], "i1")
    assert_tensor(xo.constant([1, 0], "i1"), [True, False], "i1")
    assert_tensor(xo.constant(1 + 2j), np.complex64(1 + 2j), "c64")
    assert_tensor(xo.constant([1, 2], "f16"), [1.0, 2.0], "f16")
    assert_tensor(xo.constant(2**64 - 1, "ui64"), np.uint64(2**64 - 1), "ui64")
    assert_tensor(xo.constant(-(2**63), "i64"), np.int64(-(2**63)), "i64")
    assert_tensor(xo.constant([-8, 7], "i4"), [-8, 7], "i4")
    # 0.1 rounds correctly (once) to bf16 and f8
    for name in ("bf16", "f8E4M3FN", "f8E5M2", "f16"):
        dt = xo.as_dtype(name)
        want = np.array(0.1, np.float64).astype(dt.np)  # ml_dtypes/NumPy: correct for 0.1
        assert bits(xo.constant(0.1, name)) == bits(want)
    assert xo.constant(np.float64(-0.0), "f64").item() == 0.0
    assert np.signbit(np.asarray(xo.constant(-0.0, "bf16")).astype(np.float32))
    assert np.isnan(xo.constant(float("nan"), "f8E4M3FN").item())
    assert xo.constant([[]], "i32").shape == (1, 0)


def test_dynamic_slice_clamping_extremes():
    x = xo.tensor(np.arange(10), "i32")
    cases = [
        ("i64", -1, 0),
        ("i64", -(2**63), 0),
        ("i64", 2**63 - 1, 7),
        ("i64", 100, 7),
        ("i8", -128, 0),
        ("i8", 127, 7),
        ("i32", 5, 5),
        ("ui8", 255, 7),
        ("ui64", 2**64 - 1, 7),
        ("ui64", 2**63, 7),
        ("ui32", 3, 3),
        ("i4", -8, 0),
        ("i4", 7, 7),
        ("ui4", 15, 7),
        ("i2", -2, 0),
        ("ui2", 3, 3),
        ("i16", 6, 6),
    ]
    for name, start, adjusted in cases:
        got = xo.dynamic_slice(x, [xo.tensor(start, name)], [3])
        assert_tensor(got, np.arange(10)[adjusted : adjusted + 3], "i32")
        got = xo.dynamic_update_slice(x, xo.tensor([-1, -2, -3], "i32"), [xo.tensor(start, name)])
        want = np.arange(10)
        want[adjusted : adjusted + 3] = [-1, -2, -3]
        assert_tensor(got, want, "i32")
    # 2-D, every start its own extreme, 1-D index tensor form, Python ints
    m = xo.tensor(np.arange(20).reshape(4, 5), "f32")
    got = xo.dynamic_slice(m, [xo.tensor(-(2**63), "i64"), xo.tensor(2**63 - 1, "i64")], [2, 2])
    assert_tensor(got, np.arange(20).reshape(4, 5)[0:2, 3:5])
    got = xo.dynamic_slice(m, xo.tensor(np.array([2**64 - 1, 1], np.uint64)), [2, 2])
    assert_tensor(got, np.arange(20).reshape(4, 5)[2:4, 1:3])
    got = xo.dynamic_slice(m, np.array([-5, 2]), [4, 3])
    assert_tensor(got, np.arange(20).reshape(4, 5)[0:4, 2:5])
    got = xo.dynamic_slice(m, [xo.tensor(1, "ui16"), 9], [1, 5])  # Python int takes ui16
    assert_tensor(got, np.arange(20).reshape(4, 5)[1:2, :])
    # zero-size slices and full-size slices clamp to 0
    assert xo.dynamic_slice(m, [-1, 99], [0, 0]).shape == (0, 0)
    assert_tensor(xo.dynamic_slice(m, [3, 3], [4, 5]), np.arange(20).reshape(4, 5))
    # rank 0: no start indices at all
    assert_tensor(xo.dynamic_slice(xo.tensor(7, "i8"), [], []), np.int8(7), "i8")
    assert_tensor(xo.dynamic_update_slice(xo.tensor(7, "i8"), 3, []), np.int8(3), "i8")


def test_pad_negative_edges_and_interior():
    a = np.arange(1, 7).reshape(2, 3)
    x = xo.tensor(a, "i16")
    # low -1 removes the first element, high -2 removes the last interior pad and element
    for low, high, interior in [
        ([-1, 0], [0, 0], [0, 0]),
        ([0, -2], [0, -2], [1, 1]),
        ([-3, 0], [0, 0], [1, 0]),
        ([0, -5], [0, 0], [0, 2]),
        ([1, -7], [1, 0], [0, 2]),
        ([-1, -3], [0, -1], [0, 1]),
    ]:
        want = ref_pad(a.astype(np.int16), np.int16(-9), low, high, interior)
        assert_tensor(xo.pad(x, -9, low, high, interior), want, "i16")
    # result dims may be zero; padding a zero-size operand
    assert xo.pad(x, 0, [-2, 0], [0, 0], [0, 0]).shape == (0, 3)
    assert_tensor(
        xo.pad(xo.tensor(np.zeros((0, 2)), "f32"), 1.5, [1, 0], [1, 0], [3, 0]),
        np.full((2, 2), 1.5),
    )
    assert_tensor(xo.pad(xo.tensor(5, "i8"), 0, [], [], []), np.int8(5), "i8")
    # padding with NaN and -0.0 keeps their bits
    y = xo.pad(xo.tensor([1.0], "f64"), -0.0, [1], [0], [0])
    assert np.signbit(np.asarray(y)[0])


def test_broadcast_in_dim_unsorted_and_scalar():
    x = xo.tensor([[1, 2, 3], [4, 5, 6]], "i32")
    assert_tensor(xo.broadcast_in_dim(x, [1, 0], [3, 2]), [[1, 4], [2, 5], [3, 6]])
    assert_tensor(xo.broadcast_in_dim(xo.tensor(7, "ui8"), [], [2, 2]), np.full((2, 2), 7), "ui8")
    assert_tensor(xo.broadcast_in_dim(x, [0, 2], [2, 0, 3]), np.zeros((2, 0, 3)))
    z = xo.broadcast_in_dim(xo.tensor([[1, 2, 3]]), [0, 1], [0, 3])
    assert z.shape == (0, 3)
    # a stride-0 view, no copy
    b = xo.broadcast_in_dim(x, [1, 2], [1000, 2, 3])
    assert 0 in np.asarray(b).strides


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_broadcast_views_are_read_only_and_keep_their_memory(dt):
    """broadcast_in_dim / broadcast build their stride-0 views straight from the
    operand's buffer (xops.ops._core.broadcast_view): the values and read-only flag of
    np.broadcast_to, for C-contiguous, transposed, sliced, 0-d and pooled operands; a
    view outlives the tensor it came from (a pooled buffer is not handed out again)."""
    big = sample(dt, (300, 1000), seed=3)  # 300k elements: a pooled result below
    cases = [
        (sample(dt, (4, 1, 3)), [0, 1, 3], [4, 2, 5, 3]),
        (sample(dt, (3, 4)).T, [2, 0], [3, 6, 4]),  # not C-contiguous: np.broadcast_to
        (sample(dt, (5, 8))[::2, 1:4], [0, 1], [3, 3]),
        (sample(dt, ()), [], [2, 3]),
    ]
    for v, bd, shape in cases:
        got = np.asarray(xo.broadcast_in_dim(xo.tensor(v, dt), bd, shape))
        order = sorted(range(v.ndim), key=lambda k: bd[k])
        view = [1] * len(shape)
        for k in order:
            view[bd[k]] = v.shape[k]
        want = np.broadcast_to(np.transpose(v, order).reshape(view), shape)
        np.testing.assert_array_equal(bits(got), bits(want))
        assert not got.flags.writeable
    got = np.asarray(xo.broadcast(xo.tensor(v, dt), [2]))
    np.testing.assert_array_equal(bits(got), bits(np.broadcast_to(v, (2,))))
    t = xo.negate(xo.tensor(big, dt)) if dt.kind in ("float", "si") and not dt.quantized else None
    if t is not None:
        want = np.asarray(t).copy()
        b = xo.broadcast_in_dim(t, [1, 2], [2, 300, 1000])
        del t
        other = xo.tensor(sample(dt, (300, 1000), seed=4), dt)
        for _ in range(3):  # results of the same size: a fresh buffer each, not b's
            xo.negate(other)
        np.testing.assert_array_equal(bits(np.asarray(b)[1]), bits(want))


def test_transpose_is_np_transpose_not_inverse():
    a = np.arange(24).reshape(2, 3, 4)
    got = xo.transpose(xo.tensor(a), [1, 2, 0])
    assert got.shape == (3, 4, 2)
    assert_tensor(got, np.transpose(a, (1, 2, 0)))


def test_attribute_kinds():
    x = xo.tensor(np.arange(6).reshape(2, 3), "i32")
    for perm in (
        [1, 0],
        (1, 0),
        np.array([1, 0]),
        xo.tensor([1, 0], "i64"),
        xo.tensor([1, 0], "i32"),
    ):
        assert_tensor(xo.transpose(x, perm), np.arange(6).reshape(2, 3).T)
    assert_tensor(
        xo.slice(x, np.array([0, 1]), xo.tensor([2, 3]), (1, 2)),
        np.arange(6).reshape(2, 3)[:, 1::2],
    )
    assert_tensor(xo.get_dimension_size(x, xo.tensor(0)), np.int32(2), "i32")
    assert_tensor(xo.concatenate([x, x], np.int64(1)), np.tile(np.arange(6).reshape(2, 3), 2))


def test_operands_numpy_and_python():
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    assert_tensor(xo.transpose(a, [1, 0]), a.T, "f16")
    assert_tensor(xo.reshape(3, [1]), [3], "i64")
    assert_tensor(xo.pad(np.array([1, 2], np.uint8), 9, [1], [1], [0]), [9, 1, 2, 9], "ui8")
    assert_tensor(xo.concatenate([np.array([1.0]), np.array([2.0])], 0), [1.0, 2.0], "f64")
    assert_tensor(
        xo.dynamic_update_slice(np.zeros(3, np.int8), np.ones(1, np.int8), [1]), [0, 1, 0], "i8"
    )
    # a Python scalar padding value takes the operand's type (weak), bf16 here
    assert_tensor(xo.pad(xo.tensor([1.0], "bf16"), 0.5, [1], [0], [0]), [0.5, 1.0], "bf16")


# ---------------------------------------------------------------------------------------
# Immutability: inputs never change, results are read-only, no aliasing of user memory
# ---------------------------------------------------------------------------------------

IMMUTABLE_CASES = [
    ("broadcast_in_dim", lambda x: xo.broadcast_in_dim(x, [0, 1], [2, 3])),
    ("broadcast", lambda x: xo.broadcast(x, [2])),
    ("reshape", lambda x: xo.reshape(x, [3, 2])),
    ("reshape_dims", lambda x: xo.reshape(x, [6], [1, 0])),
    ("collapse", lambda x: xo.collapse(x, [0, 1])),
    ("transpose", lambda x: xo.transpose(x, [1, 0])),
    ("slice", lambda x: xo.slice(x, [0, 1], [2, 3], [1, 1])),
    ("dynamic_slice", lambda x: xo.dynamic_slice(x, [0, 1], [1, 2])),
    ("dynamic_update_slice", lambda x: xo.dynamic_update_slice(x, xo.tensor([[9.0]]), [1, 1])),
    ("pad", lambda x: xo.pad(x, 0.0, [1, -1], [0, 1], [1, 0])),
    ("concatenate", lambda x: xo.concatenate([x, x], 1)),
    ("reverse", lambda x: xo.reverse(x, [0, 1])),
    ("set_dimension_size", lambda x: xo.set_dimension_size(x, 1, 1)),
    ("constant", lambda x: xo.constant(x)),
]


@pytest.mark.parametrize("name,fn", IMMUTABLE_CASES, ids=[c[0] for c in IMMUTABLE_CASES])
def test_inputs_unchanged_results_read_only(name, fn):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = xo.tensor(a)
    before = x.numpy()
    out = fn(x)
    assert np.array_equal(np.asarray(x), before)
    assert not np.asarray(out).flags.writeable
    with pytest.raises(ValueError):
        np.asarray(out)[...] = 1
    assert not np.asarray(x).flags.writeable
    # a NumPy operand is copied, never aliased: changing it later changes nothing
    host = a.copy()
    out2 = fn(host)
    snapshot = out2.numpy()
    host[...] = -1
    assert np.array_equal(np.asarray(out2), snapshot)


# ---------------------------------------------------------------------------------------
# One negative test per constraint label
# ---------------------------------------------------------------------------------------

X23 = xo.tensor(np.arange(6).reshape(2, 3), "i32")
I64 = xo.tensor(0, "i64")

NEGATIVE = [
    # constant
    ("constant", "C1", lambda: xo.constant(X23, "i64")),
    ("constant", "C1", lambda: xo.constant(np.zeros(2, np.float64), "f32")),
    ("constant", "C1", lambda: xo.constant(128, "i8")),
    ("constant", "C1", lambda: xo.constant(-1, "ui32")),
    ("constant", "C1", lambda: xo.constant(2**64, "ui64")),
    ("constant", "C1", lambda: xo.constant(2**70)),
    ("constant", "C1", lambda: xo.constant(1.5, "i32")),
    ("constant", "C1", lambda: xo.constant(True, "f32")),
    ("constant", "C1", lambda: xo.constant(1j, "f64")),
    ("constant", "C1", lambda: xo.constant(2, "i1")),
    ("constant", "I1", lambda: xo.constant("abc")),
    ("constant", "I1", lambda: xo.constant([[1, 2], [3]])),
    # iota
    ("iota", "C1", lambda: xo.iota(2, [2, 3], "i32")),
    ("iota", "C1", lambda: xo.iota(-1, [2, 3], "i32")),
    ("iota", "C1", lambda: xo.iota(0, [], "i32")),
    ("iota", "I1", lambda: xo.iota(0.0, [2], "i32")),
    ("iota", "I2", lambda: xo.iota(0, [-1], "i32")),
    ("iota", "I2", lambda: xo.iota(0, [9], "i4")),
    ("iota", "I3", lambda: xo.iota(0, [2], "i1")),
    ("iota", "I3", lambda: xo.iota(0, [2], "nope")),
    # broadcast_in_dim
    ("broadcast_in_dim", "C2", lambda: xo.broadcast_in_dim(X23, [0], [2, 3])),
    ("broadcast_in_dim", "C3", lambda: xo.broadcast_in_dim(X23, [0, 2], [2, 3])),
    ("broadcast_in_dim", "C3", lambda: xo.broadcast_in_dim(X23, [-1, 1], [2, 3])),
    ("broadcast_in_dim", "C4", lambda: xo.broadcast_in_dim(X23, [1, 1], [3, 3])),
    ("broadcast_in_dim", "C5", lambda: xo.broadcast_in_dim(X23, [0, 1], [2, 4])),
    ("broadcast_in_dim", "C5", lambda: xo.broadcast_in_dim(X23, [1, 0], [2, 3])),
    ("broadcast_in_dim", "I2", lambda: xo.broadcast_in_dim(X23, [0.0, 1.0], [2, 3])),
    ("broadcast_in_dim", "I3", lambda: xo.broadcast_in_dim(X23, [0, 1], [2, -3])),
    # broadcast (XLA)
    ("broadcast", "C1", lambda: xo.broadcast(X23, [-1])),
    ("broadcast", "I2", lambda: xo.broadcast(X23, 2)),
    # reshape
    ("reshape", "C2", lambda: xo.reshape(X23, [4])),
    ("reshape", "C2", lambda: xo.reshape(X23, [-1])),
    ("reshape", "C2", lambda: xo.reshape(X23, [-2, -3])),
    ("reshape", "I2", lambda: xo.reshape(X23, "6")),
    ("reshape", "I3", lambda: xo.reshape(X23, [6], [0, 0])),
    ("reshape", "I3", lambda: xo.reshape(X23, [6], [0])),
    # collapse (XLA)
    ("collapse", "C1", lambda: xo.collapse(X23, [1, 0])),
    ("collapse", "C1", lambda: xo.collapse(xo.iota(0, [2, 3, 4]), [0, 2])),
    ("collapse", "C1", lambda: xo.collapse(X23, [1, 2])),
    # transpose
    ("transpose", "C2", lambda: xo.transpose(X23, [0, 0])),
    ("transpose", "C2", lambda: xo.transpose(X23, [0])),
    ("transpose", "C2", lambda: xo.transpose(X23, [1, 2])),
    ("transpose", "I2", lambda: xo.transpose(X23, None)),
    # slice
    ("slice", "C2", lambda: xo.slice(X23, [0], [1], [1])),
    ("slice", "C2", lambda: xo.slice(X23, [0, 0], [1, 1], [1])),
    ("slice", "C3", lambda: xo.slice(X23, [-1, 0], [1, 1])),
    ("slice", "C3", lambda: xo.slice(X23, [1, 2], [0, 3])),
    ("slice", "C3", lambda: xo.slice(X23, [0, 0], [3, 3])),
    ("slice", "C4", lambda: xo.slice(X23, [0, 0], [2, 3], [0, 1])),
    ("slice", "C4", lambda: xo.slice(X23, [0, 0], [2, 3], [1, -1])),
    ("slice", "I2", lambda: xo.slice(X23, 0, [2, 3])),
    # dynamic_slice
    ("dynamic_slice", "C2", lambda: xo.dynamic_slice(X23, [I64], [1, 1])),
    ("dynamic_slice", "C2", lambda: xo.dynamic_slice(X23, [I64, I64], [1])),
    ("dynamic_slice", "C3", lambda: xo.dynamic_slice(X23, [I64, xo.tensor(0, "i32")], [1, 1])),
    ("dynamic_slice", "C3", lambda: xo.dynamic_slice(X23, [xo.tensor(0, "ui64"), I64], [1, 1])),
    ("dynamic_slice", "C4", lambda: xo.dynamic_slice(X23, [I64, I64], [3, 1])),
    ("dynamic_slice", "C4", lambda: xo.dynamic_slice(X23, [I64, I64], [1, -1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [xo.tensor(0.0), I64], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [xo.tensor(True), I64], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [xo.tensor([0]), I64], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [1.0, 0], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [True, 0], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, [xo.tensor(0, "ui8"), -1], [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, 0, [1, 1])),
    ("dynamic_slice", "I2", lambda: xo.dynamic_slice(X23, xo.tensor([[0, 0]]), [1, 1])),
    ("dynamic_slice", "I3", lambda: xo.dynamic_slice(X23, [0, 0], 1)),
    # dynamic_update_slice
    (
        "dynamic_update_slice",
        "C2",
        lambda: xo.dynamic_update_slice(X23, xo.tensor([[1]], "i64"), [I64, I64]),
    ),
    (
        "dynamic_update_slice",
        "C3",
        lambda: xo.dynamic_update_slice(X23, xo.tensor([1], "i32"), [I64, I64]),
    ),
    (
        "dynamic_update_slice",
        "C4",
        lambda: xo.dynamic_update_slice(X23, xo.tensor([[1]], "i32"), [I64]),
    ),
    (
        "dynamic_update_slice",
        "C5",
        lambda: xo.dynamic_update_slice(X23, xo.tensor([[1]], "i32"), [I64, xo.tensor(0, "i8")]),
    ),
    (
        "dynamic_update_slice",
        "C6",
        lambda: xo.dynamic_update_slice(X23, xo.tensor(np.zeros((3, 1)), "i32"), [I64, I64]),
    ),
    (
        "dynamic_update_slice",
        "I3",
        lambda: xo.dynamic_update_slice(X23, xo.tensor([[1]], "i32"), [xo.tensor(0.5), I64]),
    ),
    # pad
    ("pad", "C1", lambda: xo.pad(X23, xo.tensor(0, "i64"), [0, 0], [0, 0], [0, 0])),
    ("pad", "C1", lambda: xo.pad(X23, np.float32(0), [0, 0], [0, 0], [0, 0])),
    ("pad", "C2", lambda: xo.pad(X23, 0, [0, 0, 0], [0, 0], [0, 0])),
    ("pad", "C2", lambda: xo.pad(X23, 0, [0, 0], [0], [0, 0])),
    ("pad", "C2", lambda: xo.pad(X23, 0, [0, 0], [0, 0], [0])),
    ("pad", "C3", lambda: xo.pad(X23, 0, [0, 0], [0, 0], [0, -1])),
    ("pad", "C4", lambda: xo.pad(X23, 0, [-2, 0], [-1, 0], [0, 0])),
    ("pad", "C4", lambda: xo.pad(X23, 0, [0, -4], [0, -2], [0, 1])),
    ("pad", "I2", lambda: xo.pad(X23, xo.tensor([0], "i32"), [0, 0], [0, 0], [0, 0])),
    ("pad", "I3", lambda: xo.pad(X23, 0, 0, [0, 0], [0, 0])),
    # concatenate
    ("concatenate", "C1", lambda: xo.concatenate([X23, xo.tensor(np.zeros((2, 3)), "i64")], 0)),
    ("concatenate", "C2", lambda: xo.concatenate([X23, xo.tensor(np.zeros((2, 2)), "i32")], 0)),
    ("concatenate", "C2", lambda: xo.concatenate([X23, xo.tensor(np.zeros(3), "i32")], 0)),
    ("concatenate", "C3", lambda: xo.concatenate([], 0)),
    ("concatenate", "C4", lambda: xo.concatenate([X23, X23], 2)),
    ("concatenate", "C4", lambda: xo.concatenate([X23, X23], -1)),
    ("concatenate", "C4", lambda: xo.concatenate([xo.tensor(1), xo.tensor(2)], 0)),
    ("concatenate", "I1", lambda: xo.concatenate(X23, 0)),
    ("concatenate", "I2", lambda: xo.concatenate([X23], 0.0)),
    # reverse
    ("reverse", "C2", lambda: xo.reverse(X23, [0, 0])),
    ("reverse", "C3", lambda: xo.reverse(X23, [2])),
    ("reverse", "C3", lambda: xo.reverse(X23, [-1])),
    ("reverse", "I2", lambda: xo.reverse(X23, 0)),
    # get_dimension_size
    ("get_dimension_size", "C1", lambda: xo.get_dimension_size(X23, 2)),
    ("get_dimension_size", "C1", lambda: xo.get_dimension_size(X23, -1)),
    ("get_dimension_size", "C1", lambda: xo.get_dimension_size(xo.tensor(1.0), 0)),
    ("get_dimension_size", "I2", lambda: xo.get_dimension_size(X23, 1.0)),
    # set_dimension_size (XLA)
    ("set_dimension_size", "C1", lambda: xo.set_dimension_size(X23, 1, 2)),
    ("set_dimension_size", "C2", lambda: xo.set_dimension_size(X23, 4, 1)),
    ("set_dimension_size", "C2", lambda: xo.set_dimension_size(X23, xo.tensor(-1, "i32"), 1)),
    ("set_dimension_size", "I2", lambda: xo.set_dimension_size(X23, 1.0, 1)),
    ("set_dimension_size", "I2", lambda: xo.set_dimension_size(X23, xo.tensor([1]), 1)),
    ("set_dimension_size", "I2", lambda: xo.set_dimension_size(X23, True, 1)),
    ("set_dimension_size", "I3", lambda: xo.set_dimension_size(X23, 1, 1.0)),
]


@pytest.mark.parametrize(
    "op,label,fn", NEGATIVE, ids=[f"{op}-{label}-{i}" for i, (op, label, _) in enumerate(NEGATIVE)]
)
def test_constraint_violations(op, label, fn):
    with raises_spec(op, label):
        fn()


def test_error_messages_give_actual_values():
    with pytest.raises(xo.SpecError) as e:
        xo.pad(X23, 0, [0, 0, 0], [0, 0], [0, 0])
    assert "rank(operand)=2" in str(e.value) and "[0, 0, 0]" in str(e.value)
    with pytest.raises(xo.SpecError) as e:
        xo.reshape(X23, [-1])
    assert "-1" in str(e.value) and "wildcard" in str(e.value)
    with pytest.raises(xo.SpecError) as e:
        xo.slice(X23, [0, 0], [3, 3])
    assert "i32[2,3]" in str(e.value)


# ---------------------------------------------------------------------------------------
# Hypothesis properties against the references
# ---------------------------------------------------------------------------------------

PROPS = settings(max_examples=50, deadline=None)
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@PROPS
@given(st.data())
def test_prop_slice(data):
    shape = data.draw(shapes)
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    start, limit, step = [], [], []
    for n in shape:
        s = data.draw(st.integers(0, n))
        start.append(s)
        limit.append(data.draw(st.integers(s, n)))
        step.append(data.draw(st.integers(1, 4)))
    assert_tensor(xo.slice(a, start, limit, step), ref_slice(a, start, limit, step))


@PROPS
@given(st.data())
def test_prop_pad(data):
    shape = data.draw(shapes)
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int16).reshape(shape)
    low, high, interior = [], [], []
    for n in shape:
        it = data.draw(st.integers(0, 3))
        lo = data.draw(st.integers(-6, 4))
        full = lo + n + max(n - 1, 0) * it
        hi = data.draw(st.integers(max(-full, -6), max(-full, 4)))
        low.append(lo), high.append(hi), interior.append(it)
    assert_tensor(xo.pad(a, -1, low, high, interior), ref_pad(a, np.int16(-1), low, high, interior))


@PROPS
@given(st.data())
def test_prop_transpose_reverse(data):
    shape = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple))
    a = np.arange(int(np.prod(shape)), dtype=np.uint8).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    assert_tensor(xo.transpose(a, perm), ref_transpose(a, perm))
    dims = data.draw(
        st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True, max_size=len(shape))
    )
    assert_tensor(xo.reverse(a, dims), ref_reverse(a, dims))


@PROPS
@given(st.data())
def test_prop_broadcast_in_dim(data):
    shape = data.draw(shapes)
    r = len(shape)
    extra = data.draw(st.lists(st.integers(0, 3), max_size=2))
    rr = r + len(extra)
    bd = data.draw(st.permutations(range(rr)))[:r]
    out = [0] * rr
    free = [d for d in range(rr) if d not in bd]
    for k, d in enumerate(bd):
        out[d] = shape[k] if shape[k] != 1 else data.draw(st.integers(0, 3))
    for e, d in zip(extra, free):
        out[d] = e
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    assert_tensor(xo.broadcast_in_dim(a, bd, out), ref_broadcast_in_dim(a, bd, out))


@PROPS
@given(st.data())
def test_prop_dynamic_slice_and_update(data):
    shape = data.draw(shapes)
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    name = data.draw(st.sampled_from(["i8", "i32", "i64", "ui8", "ui64"]))
    dt = xo.as_dtype(name)
    starts = [
        data.draw(
            st.integers(dt.min, dt.max) | st.integers(-3, 6).filter(lambda v: dt.min <= v <= dt.max)
        )
        for _ in shape
    ]
    idx = [xo.tensor(s, name) for s in starts]
    assert_tensor(xo.dynamic_slice(a, idx, sizes), ref_dynamic_slice(a, starts, sizes))
    u = -np.arange(1, int(np.prod(sizes)) + 1, dtype=np.int64).reshape(sizes)
    assert_tensor(xo.dynamic_update_slice(a, u, idx), ref_dynamic_update_slice(a, u, starts))
