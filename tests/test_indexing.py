"""gather and scatter: spec examples, kernels vs the spec-shaped references over an
attribute zoo, extreme indices, fast vs generic bodies, parallel vs serial, thread
counts, JAX cross-checks, gradients, and one negative test per constraint label."""

import numpy as np
import pytest

import xops as xo
import xops.kernels.config as kconfig
from xops.ops.indexing import gather_reference, scatter_reference

from conftest import assert_tensor, bits, raises_spec
from gradcheck import check_grads

I64 = np.iinfo(np.int64)


# ---------------------------------------------------------------------------------------
# spec examples (seed 004) and the conformance-suite batching example's shapes
# ---------------------------------------------------------------------------------------

SPEC_OPERAND = np.arange(1, 25, dtype=np.int64).reshape(3, 4, 2)


def test_gather_spec_example():
    si = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]])
    r = xo.gather(
        SPEC_OPERAND,
        si,
        offset_dims=[2, 3],
        collapsed_slice_dims=[0],
        start_index_map=[1, 0],
        index_vector_dim=2,
        slice_sizes=[1, 2, 2],
    )
    assert_tensor(
        r,
        [
            [[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
            [[[9, 10], [11, 12]], [[11, 12], [13, 14]], [[17, 18], [19, 20]]],
        ],
        "i64",
    )


def test_gather_clamps_like_the_conformance_example():
    # [0, 9] clamps to start (dim 1) 0 -> rows at dim0 = clamp(9, 0, 3-1) = 2
    si = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]])
    r = xo.gather(SPEC_OPERAND, si, [2, 3], [0], [1, 0], 2, [1, 2, 2])
    assert_tensor(r[1, 2], [[17, 18], [19, 20]])


def test_gather_batching_dims_example():
    operand = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    si = np.array(
        [
            [[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
            [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]],
        ]
    )
    r = xo.gather(
        operand,
        si,
        offset_dims=[3, 4],
        collapsed_slice_dims=[1],
        start_index_map=[2, 1],
        index_vector_dim=3,
        slice_sizes=[1, 1, 2, 2],
        operand_batching_dims=[0],
        start_indices_batching_dims=[1],
    )
    want = [
        [
            [[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
            [[[33, 34], [35, 36]], [[35, 36], [37, 38]], [[41, 42], [43, 44]]],
        ],
        [
            [[[1, 2], [3, 4]], [[13, 14], [15, 16]], [[21, 22], [23, 24]]],
            [[[43, 44], [45, 46]], [[33, 34], [35, 36]], [[27, 28], [29, 30]]],
        ],
    ]
    assert_tensor(r, want, "i64")


def test_scatter_spec_example():
    si = np.array([[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [0, 9]]])
    upd = np.ones((2, 3, 2, 2), np.int64)
    r = xo.scatter(
        SPEC_OPERAND,
        si,
        upd,
        update_window_dims=[2, 3],
        inserted_window_dims=[0],
        scatter_dims_to_operand_dims=[1, 0],
        index_vector_dim=2,
        update_computation=xo.add,
    )
    assert_tensor(
        r,
        [
            [[1, 2], [5, 6], [7, 8], [7, 8]],
            [[10, 11], [12, 13], [14, 15], [16, 17]],
            [[18, 19], [20, 21], [21, 22], [23, 24]],
        ],
        "i64",
    )


def test_scatter_batching_dims():
    inp = np.zeros((2, 3, 4), np.int64)
    si = np.array([[1, 3], [0, 2]])  # batch b, position j: column index
    upd = np.array([[10, 20], [30, 40]])
    # input dims: 0 batching (with indices dim 0), 1 inserted?, no: window dim 1 size 1
    r = xo.scatter(
        inp,
        si,
        upd[..., None],
        update_window_dims=[2],
        inserted_window_dims=[2],
        scatter_dims_to_operand_dims=[2],
        index_vector_dim=2,
        update_computation=xo.add,
        input_batching_dims=[0],
        scatter_indices_batching_dims=[0],
    )
    want = np.zeros((2, 3, 4), np.int64)
    want[0, 0, 1] += 10
    want[0, 0, 3] += 20
    want[1, 0, 0] += 30
    want[1, 0, 2] += 40
    assert_tensor(r, want)
    ref = scatter_reference(
        inp,
        si,
        upd[..., None],
        [2],
        [2],
        [2],
        2,
        update_computation=xo.add,
        input_batching_dims=[0],
        scatter_indices_batching_dims=[0],
    )
    assert_tensor(ref, want)


def test_scatter_partial_window_is_skipped_per_element():
    # a window of 3 starting at 2 in a dim of 4: elements 2 and 3 land, the third is
    # skipped (004: per update element); XLA/JAX would drop the whole window
    r = xo.scatter(
        np.zeros(4, np.float32),
        np.array([[2], [-1]]),
        np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]], np.float32),
        [1],
        [],
        [0],
        1,
        update_computation=xo.add,
    )
    assert_tensor(r, [20.0, 30.0, 1.0, 2.0])


# ---------------------------------------------------------------------------------------
# the attribute zoo: random valid configurations against the references
# ---------------------------------------------------------------------------------------


def _extreme(rng, dtype, dim):
    info = np.iinfo(dtype)
    pool = (
        [info.min, info.max, -1, 0, dim, dim + 1, -dim - 5]
        if info.min < 0
        else [info.max, 0, dim, dim + 1, info.max - 1]
    )
    pool = [v for v in pool if info.min <= v <= info.max]
    return rng.choice(np.array(pool, dtype=dtype))


def _indices(rng, shape, dtype, dims, ivd):
    """Mostly in-range indices (a few out of range) with some extreme values; ``dims``
    is the extent each index component addresses."""
    a = np.empty(shape, dtype)
    info = np.iinfo(dtype)
    for pos in np.ndindex(*shape):
        k = pos[ivd] if ivd < len(shape) else 0
        dim = dims[k] if k < len(dims) else 1
        if rng.random() < 0.12:
            a[pos] = _extreme(rng, dtype, dim)
        else:
            v = int(rng.integers(-2, dim + 2))
            a[pos] = min(max(v, info.min), info.max)
    return a


IDX_DTYPES = [np.int64, np.int32, np.int8, np.uint8, np.uint32, np.uint64]


def _gather_case(seed):
    """A random valid gather: operand, start_indices and the attributes."""
    rng = np.random.default_rng(seed)
    r = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 6)) for _ in range(r)]
    if rng.random() < 0.05:
        shape[int(rng.integers(r))] = 0
    dims = list(range(r))
    rng.shuffle(dims)
    nbatch = int(rng.integers(0, 2)) if r > 1 else 0
    obd = sorted(dims[:nbatch])
    rest = dims[nbatch:]
    ncol = int(rng.integers(0, len(rest) + 1))
    cd = sorted(rest[:ncol])
    free = [d for d in range(r) if d not in obd]
    k = int(rng.integers(0, len(free) + 1))
    sim = list(rng.permutation(free)[:k])
    ss = []
    for d in range(r):
        if d in cd or d in obd:
            ss.append(min(1, shape[d]) if rng.random() < 0.9 else 0)
        elif rng.random() < 0.06 or shape[d] == 0:
            ss.append(0)
        else:
            ss.append(int(rng.integers(1, shape[d] + 1)))
    nbd = int(rng.integers(0, 3))
    bshape = [int(rng.integers(1, 4)) for _ in range(nbd)]
    si_rank = nbd + nbatch + (1 if k != 1 or rng.random() < 0.5 else 0)
    implicit = si_rank == nbd + nbatch  # index_vector_dim == rank, K == 1
    ivd = si_rank if implicit else int(rng.integers(0, si_rank))
    positions = [d for d in range(si_rank) if d != ivd]
    rng.shuffle(positions)
    sibd = positions[:nbatch]
    si_shape = [0] * si_rank
    for d in range(si_rank):
        if d == ivd:
            si_shape[d] = k
        elif d in sibd:
            si_shape[d] = shape[obd[sibd.index(d)]]
    others = iter(bshape)
    for d in range(si_rank):
        if d != ivd and d not in sibd:
            si_shape[d] = next(others)
    if rng.random() < 0.05 and nbd:
        si_shape[[d for d in range(si_rank) if d != ivd and d not in sibd][0]] = 0
    batch_rank = si_rank - (0 if implicit else 1)
    n_off = r - len(cd) - len(obd)
    od = sorted(rng.permutation(batch_rank + n_off)[:n_off].tolist())
    idt = IDX_DTYPES[seed % len(IDX_DTYPES)]
    si = _indices(rng, si_shape, idt, [shape[d] for d in sim], ivd)
    operand = rng.standard_normal(shape).astype(np.float32)
    return (
        operand,
        si,
        dict(
            offset_dims=od,
            collapsed_slice_dims=cd,
            start_index_map=sim,
            index_vector_dim=ivd,
            slice_sizes=ss,
            operand_batching_dims=obd,
            start_indices_batching_dims=sibd,
        ),
    )


@pytest.mark.parametrize("seed", range(60))
def test_gather_zoo_vs_reference(seed):
    operand, si, attrs = _gather_case(seed)
    got = xo.gather(operand, si, **attrs)
    want = gather_reference(operand, si, **attrs)
    assert_tensor(got, np.asarray(want), "f32")


def _scatter_case(seed):
    """A random valid scatter, built as the mirror of a random gather."""
    rng = np.random.default_rng(1000 + seed)
    operand, si, a = _gather_case(1000 + seed)
    shape = operand.shape
    ss = [
        s if d not in a["collapsed_slice_dims"] and d not in a["operand_batching_dims"] else 1
        for d, s in enumerate(a["slice_sizes"])
    ]
    if any(shape[d] == 0 for d in a["collapsed_slice_dims"] + a["operand_batching_dims"]):
        ss = [min(s, shape[d]) for d, s in enumerate(ss)]
    attrs = dict(
        update_window_dims=a["offset_dims"],
        inserted_window_dims=a["collapsed_slice_dims"],
        scatter_dims_to_operand_dims=a["start_index_map"],
        index_vector_dim=a["index_vector_dim"],
        input_batching_dims=a["operand_batching_dims"],
        scatter_indices_batching_dims=a["start_indices_batching_dims"],
    )
    # updates shape: the gather result shape for these slice sizes
    ivd = a["index_vector_dim"]
    batch = [n for d, n in enumerate(si.shape) if d != ivd]
    off = [
        ss[d]
        for d in range(len(shape))
        if d not in a["collapsed_slice_dims"] and d not in a["operand_batching_dims"]
    ]
    rank = len(batch) + len(off)
    ushape, ib, io = [], iter(batch), iter(off)
    for d in range(rank):
        ushape.append(next(io) if d in a["offset_dims"] else next(ib))
    upd = rng.standard_normal(ushape).astype(np.float32)
    # duplicates: repeat a few index vectors
    if si.size and rng.random() < 0.7:
        flat = si.reshape(-1)
        flat[rng.integers(0, flat.size, flat.size // 2)] = flat[0]
    return operand, si, upd, attrs


def _add_generic(a, b):
    c = xo.add(a, b)  # two statements: not recognised, runs on the generic path
    return c


def _overwrite(a, b):
    return b


BODIES = {
    "add": xo.add,
    "add_generic": _add_generic,
    "overwrite": lambda a, b: b,
    "subtract": lambda a, b: xo.subtract(a, b),
    "maximum": xo.maximum,
    "multiply": lambda a, b: xo.multiply(a, b),
}


@pytest.mark.parametrize("seed", range(48))
def test_scatter_zoo_vs_reference(seed):
    operand, si, upd, attrs = _scatter_case(seed)
    name = list(BODIES)[seed % len(BODIES)]
    body = BODIES[name]
    got = xo.scatter(operand, si, upd, update_computation=body, **attrs)
    want = scatter_reference(operand, si, upd, update_computation=body, **attrs)
    assert_tensor(got, np.asarray(want), "f32")


def test_scatter_zoo_fast_equals_generic():
    for seed in range(48):
        operand, si, upd, attrs = _scatter_case(seed)
        fast = xo.scatter(operand, si, upd, update_computation=xo.add, **attrs)
        slow = xo.scatter(operand, si, upd, update_computation=_add_generic, **attrs)
        np.testing.assert_array_equal(bits(fast), bits(slow))
        fast = xo.scatter(operand, si, upd, update_computation=lambda a, b: b, **attrs)
        slow = xo.scatter(
            operand, si, upd, update_computation=lambda a, b: xo.select(True, b, a), **attrs
        )
        np.testing.assert_array_equal(bits(fast), bits(slow))


# ---------------------------------------------------------------------------------------
# element types, extreme indices, duplicates
# ---------------------------------------------------------------------------------------

ROW_ATTRS = dict(
    update_window_dims=[1],
    inserted_window_dims=[0],
    scatter_dims_to_operand_dims=[0],
    index_vector_dim=1,
)


@pytest.mark.parametrize("idt", IDX_DTYPES)
def test_extreme_indices_never_out_of_bounds(idt):
    info = np.iinfo(idt)
    vals = [
        v
        for v in (
            info.min,
            info.max,
            info.max - 1,
            -1,
            0,
            1,
            3,
            4,
            5,
            -5,
            2**31,
            2**32,
            -(2**62),
            2**63 - 1,
        )
        if info.min <= v <= info.max
    ]
    idx = np.array(vals, idt)[:, None]
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    g = xo.gather(
        x,
        idx,
        offset_dims=[1],
        collapsed_slice_dims=[0],
        start_index_map=[0],
        index_vector_dim=1,
        slice_sizes=[1, 3],
    )
    clamped = np.clip(np.array(vals, dtype=object), 0, 3).astype(np.int64)
    assert_tensor(g, x[clamped])
    upd = np.ones((len(vals), 3))
    s = xo.scatter(x, idx, upd, update_computation=xo.add, **ROW_ATTRS)
    want = x.copy()
    for v in vals:
        if 0 <= v < 4:
            want[v] += 1
    assert_tensor(s, want)
    s2 = xo.scatter(x, idx, upd, update_computation=_add_generic, **ROW_ATTRS)
    assert_tensor(s2, want)


DTYPES = [
    "f32",
    "f64",
    "bf16",
    "f16",
    "f8E4M3FN",
    "i8",
    "i32",
    "i64",
    "ui8",
    "ui64",
    "i4",
    "i1",
    "c64",
    "c128",
]


def _values(rng, dt, shape):
    dt = xo.as_dtype(dt)
    if dt.kind == "bool":
        return rng.random(shape) < 0.5
    if dt.kind in ("si", "ui"):
        lo, hi = max(dt.min, -100), min(dt.max, 100)
        return xo.tensor(rng.integers(lo, hi + 1, shape), dt).numpy()
    if dt.kind == "complex":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt.np)
    return rng.standard_normal(shape).astype(np.float32).astype(dt.np)


@pytest.mark.parametrize("dt", DTYPES)
def test_dtypes_gather_scatter(dt):
    rng = np.random.default_rng(7)
    x = xo.tensor(_values(rng, dt, (6, 3)), dt)
    idx = np.array([[4], [0], [4], [9], [-1], [2], [4]])
    upd = xo.tensor(_values(rng, dt, (7, 3)), dt)
    g = xo.gather(x, idx, [1], [0], [0], 1, [1, 3])
    assert_tensor(g, np.asarray(gather_reference(x, idx, [1], [0], [0], 1, [1, 3])), dt)
    bodies = [
        lambda a, b: b,
        xo.add,
        xo.maximum,
        xo.minimum,
        lambda a, b: xo.multiply(a, b),
        _add_generic,
    ]
    for body in bodies:
        if xo.as_dtype(dt).is_complex and body in (xo.maximum, xo.minimum):
            continue
        got = xo.scatter(x, idx, upd, update_computation=body, **ROW_ATTRS)
        want = scatter_reference(x, idx, upd, update_computation=body, **ROW_ATTRS)
        np.testing.assert_array_equal(bits(got), bits(want))
        assert got.dtype == xo.as_dtype(dt)


def test_nan_payloads_and_signed_zeros_survive():
    pats = np.array(
        [0x7FC00001, 0xFFC00002, 0x7F800001, 0x80000000, 0x00000000, 0x3F800000], np.uint32
    )
    x = pats.view(np.float32)
    g = xo.gather(x, np.array([[5], [0], [1], [2], [3]]), [], [0], [0], 1, [1])
    np.testing.assert_array_equal(bits(g), pats[[5, 0, 1, 2, 3]])
    s = xo.scatter(
        np.zeros(6, np.float32),
        np.arange(6)[:, None],
        x,
        [],
        [0],
        [0],
        1,
        update_computation=lambda a, b: b,
    )
    np.testing.assert_array_equal(bits(s), pats)


def test_duplicates_non_commutative_order():
    # three updates to row 0 then one to row 1: subtract folds in index order
    x = np.array([100.0, 200.0], np.float32)
    idx = np.array([[0], [1], [0], [0]])
    upd = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    r = xo.scatter(x, idx, upd, [], [0], [0], 1, update_computation=lambda a, b: xo.subtract(a, b))
    assert_tensor(r, [87.0, 198.0])
    r = xo.scatter(x, idx, upd, [], [0], [0], 1, update_computation=lambda a, b: b)
    assert_tensor(r, [8.0, 2.0])  # the last update in schedule order wins
    r = xo.scatter(x, idx, upd, [], [0], [0], 1, update_computation=lambda a, b: xo.subtract(b, a))
    assert_tensor(r, [8.0 - (4.0 - (1.0 - 100.0)), 2.0 - 200.0])


def test_variadic_scatter():
    x0 = np.zeros(4, np.float32)
    x1 = np.full(4, -1, np.int32)
    idx = np.array([[1], [3], [1], [7]])
    u0 = np.array([5.0, 2.0, 7.0, 9.0], np.float32)
    u1 = np.array([10, 20, 30, 40], np.int32)

    def argmax_body(v, i, uv, ui):  # keep the larger value and its index, ties: smaller index
        take = xo.or_(
            xo.compare(uv, v, "GT"), xo.and_(xo.compare(uv, v, "EQ"), xo.compare(ui, i, "LT"))
        )
        return xo.select(take, uv, v), xo.select(take, ui, i)

    r0, r1 = xo.scatter([x0, x1], idx, [u0, u1], [], [0], [0], 1, update_computation=argmax_body)
    assert_tensor(r0, [0.0, 7.0, 0.0, 2.0])
    assert_tensor(r1, [-1, 30, -1, 20])
    w0, w1 = scatter_reference(
        [x0, x1], idx, [u0, u1], [], [0], [0], 1, update_computation=argmax_body
    )
    assert_tensor(w0, np.asarray(r0))
    assert_tensor(w1, np.asarray(r1))
    single = xo.scatter([x0], idx, [u0], [], [0], [0], 1, update_computation=xo.add)
    assert isinstance(single, tuple) and len(single) == 1


def test_body_promotes_element_type():
    # C15: the body may compute in a wider type; the result takes it (C17)
    x = xo.tensor([1, 2, 3], "i8")
    r = xo.scatter(
        x,
        np.array([[0], [0]]),
        xo.tensor([100, 100], "i8"),
        [],
        [0],
        [0],
        1,
        update_computation=lambda a, b: xo.add(xo.convert(a, "i32"), xo.convert(b, "i32")),
    )
    assert_tensor(r, [201, 2, 3], "i32")


def test_empty_index_sets_and_operands():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = xo.gather(x, np.zeros((0, 1), np.int32), [1], [0], [0], 1, [1, 3])
    assert g.shape == (0, 3)
    s = xo.scatter(
        x,
        np.zeros((0, 1), np.int32),
        np.zeros((0, 3), np.float32),
        update_computation=xo.add,
        **ROW_ATTRS,
    )
    assert_tensor(s, x)
    e = np.zeros((0, 3), np.float32)
    g = xo.gather(e, np.array([[0], [5]]), [1], [0], [0], 1, [0, 3])
    assert g.shape == (2, 3)  # collapsed dim with slice size 0: no element, zeros
    assert_tensor(g, np.zeros((2, 3)))
    s = xo.scatter(
        e, np.array([[0]]), np.zeros((1, 3), np.float32), update_computation=xo.add, **ROW_ATTRS
    )
    assert s.shape == (0, 3)
    # scalar operand, empty index vector
    s = xo.scatter(
        np.float32(1.0),
        np.zeros((3, 0), np.int64),
        np.array([1.0, 2.0, 3.0], np.float32),
        [],
        [],
        [],
        1,
        update_computation=xo.add,
    )
    assert_tensor(s, np.float32(7.0))


# ---------------------------------------------------------------------------------------
# parallel kernels: bit-identical to serial, independent of the thread count
# ---------------------------------------------------------------------------------------


def _big_case(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((300, 7)).astype(np.float32)
    idx = rng.integers(-20, 320, (2000, 1))
    upd = rng.standard_normal((2000, 7)).astype(np.float32)
    return x, idx, upd


def _run_all(x, idx, upd):
    out = [xo.gather(x, idx, [1], [0], [0], 1, [1, 7])]
    for body in (xo.add, lambda a, b: b, xo.maximum, xo.minimum, xo.multiply):
        out.append(xo.scatter(x, idx, upd, update_computation=body, **ROW_ATTRS))
    # elements (windows of size 1) and windows that overlap partially
    out.append(
        xo.scatter(
            x,
            np.stack([idx[:, 0] % 300, idx[:, 0] % 7], 1),
            upd[:, 0],
            [],
            [0, 1],
            [0, 1],
            1,
            update_computation=xo.add,
        )
    )
    out.append(
        xo.scatter(
            x,
            np.stack([idx[:, 0], idx[:, 0] % 5], 1),
            upd[:, :3].reshape(2000, 3),
            [1],
            [0],
            [0, 1],
            1,
            update_computation=xo.add,
        )
    )
    return [np.asarray(o).copy() for o in out]


def test_parallel_equals_serial_and_thread_counts(monkeypatch):
    import numba

    x, idx, upd = _big_case(3)
    serial = _run_all(x, idx, upd)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    before = numba.get_num_threads()
    try:
        runs = []
        for n in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(n)
            runs.append(_run_all(x, idx, upd))
    finally:
        numba.set_num_threads(before)
    for run in runs:
        for a, b in zip(serial, run):
            np.testing.assert_array_equal(bits(a), bits(b))
    ref = scatter_reference(x[:20], idx[:50] % 25, upd[:50], update_computation=xo.add, **ROW_ATTRS)
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    got = xo.scatter(x[:20], idx[:50] % 25, upd[:50], update_computation=xo.add, **ROW_ATTRS)
    np.testing.assert_array_equal(bits(got), bits(ref))


def _thread_counts():
    import numba

    return sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


def _each_thread_count(fn):
    """fn() under every thread count (1 and 2 where available), as NumPy copies."""
    import numba

    before = numba.get_num_threads()
    try:
        out = []
        for n in _thread_counts():
            numba.set_num_threads(n)
            out.append(np.asarray(fn()).copy())
        return out
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("seed", range(48))
def test_scatter_zoo_owner_chunks_vs_reference(seed, monkeypatch):
    # PARALLEL_THRESHOLD=0 on the zoo's tiny operands: owner chunks of one row, so windows
    # span chunks and partial windows are cut at chunk edges as well as at the bounds
    monkeypatch.setattr(kconfig, "PARALLEL_THRESHOLD", 0)
    operand, si, upd, attrs = _scatter_case(seed)
    for body in (xo.add, lambda a, b: b, xo.minimum):
        want = bits(scatter_reference(operand, si, upd, update_computation=body, **attrs))
        for got in _each_thread_count(
            lambda: xo.scatter(operand, si, upd, update_computation=body, **attrs)
        ):
            np.testing.assert_array_equal(bits(got), want)


@pytest.mark.parametrize("idt", [np.int64, np.int32])
def test_scatter_add_rows_bitwise_equals_add_at(idt):
    # the benchmark's shape of problem at a test size (parallel path, many owner chunks):
    # duplicates are added in index order, as np.add.at does, so the bits agree; indices
    # out of bounds (the index type's extremes included) are skipped
    rng = np.random.default_rng(5)
    n, m = 40000, 30000
    info = np.iinfo(idt)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    idx = rng.integers(-50, n + 50, m).astype(idt)
    idx[::7] = 123  # one row with thousands of updates
    idx[:6] = [info.min, info.max, -1, n, info.max - 1, info.min + 1]
    upd = rng.standard_normal((m, 8)).astype(np.float32)
    keep = (idx >= 0) & (idx < n)
    want = x.copy()
    np.add.at(want, idx[keep], upd[keep])
    assert x.size >= kconfig.PARALLEL_THRESHOLD
    for got in _each_thread_count(
        lambda: xo.scatter(x, idx[:, None], upd, update_computation=xo.add, **ROW_ATTRS)
    ):
        np.testing.assert_array_equal(bits(got), bits(want))
    over = xo.scatter(x, idx[:, None], upd, update_computation=lambda a, b: b, **ROW_ATTRS)
    last = x.copy()
    last[idx[keep]] = upd[keep]  # NumPy's fancy assignment: the last duplicate wins
    np.testing.assert_array_equal(bits(over), bits(last))
    g = xo.gather(x, idx[:, None], [1], [0], [0], 1, [1, 8])  # gather clamps
    np.testing.assert_array_equal(bits(g), bits(x[np.clip(idx.astype(np.int64), 0, n - 1)]))


def test_scatter_windows_spanning_owner_chunks():
    # windows of 1500 rows over owner chunks of 2048 rows, some partly out of bounds at
    # either end, with duplicates: every body, the fast path against the generic one
    rng = np.random.default_rng(9)
    x = rng.standard_normal((20000, 5)).astype(np.float32)
    starts = rng.integers(-1000, 20000, (40, 2))
    starts[:, 1] = rng.integers(-1, 5, 40)
    starts[::5] = starts[0]
    starts[1] = [I64.max - 10, 0]
    starts[2] = [I64.min, 2]
    upd = rng.standard_normal((40, 1500, 2)).astype(np.float32)
    attrs = dict(
        update_window_dims=[1, 2],
        inserted_window_dims=[],
        scatter_dims_to_operand_dims=[0, 1],
        index_vector_dim=1,
    )
    bodies = [
        (xo.add, _add_generic),
        (lambda a, b: b, lambda a, b: xo.select(True, b, a)),
        (xo.maximum, lambda a, b: xo.select(xo.compare(b, a, "GT"), b, a)),
    ]
    for fast, slow in bodies:
        want = bits(xo.scatter(x, starts, upd, update_computation=slow, **attrs))
        for got in _each_thread_count(
            lambda: xo.scatter(x, starts, upd, update_computation=fast, **attrs)
        ):
            np.testing.assert_array_equal(bits(got), want)


# ---------------------------------------------------------------------------------------
# the buffer pool (xops/kernels/pool.py): results and temporaries recycle dead buffers
# ---------------------------------------------------------------------------------------


def _pool_size(k):
    """A byte size no other test allocates: 256 KiB (the pool minimum) + 4 KiB * k."""
    from xops.kernels import pool

    return max(pool.MIN_BYTES, 1 << 18) + 4096 * k


def test_pool_reuses_a_buffer_only_after_every_view_died():
    from xops.kernels import pool

    if pool.MAX_FREE_BYTES <= 0:
        pytest.skip("the pool is off (XOPS_POOL_BYTES=0)")
    n = _pool_size(1) // 4
    a = pool.empty(n, np.float32)
    addr = a.ctypes.data
    a[:] = 7.0
    views = [a[10:].reshape(-1, 2).T, a.view(np.uint32)[::3], memoryview(a), np.asarray(a)]
    del a
    while views:
        b = pool.empty(n, np.float32)
        assert b.ctypes.data != addr  # a view is alive: the buffer is not free
        b[:] = -1.0
        assert (np.asarray(views[-1]).view(np.float32) == 7.0).all()
        del b
        views.pop()
    c = pool.empty((2, n // 2), np.float32)  # every view died: the buffer comes back
    assert c.ctypes.data == addr and c.ctypes.data % 64 == 0


def test_pool_tensor_results_and_numpy_views():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1 << 15, 4)).astype(np.float32)  # 512 KiB: pooled
    idx = rng.integers(0, 1 << 15, (1000, 1))
    upd = np.ones((1000, 4), np.float32)
    r = xo.scatter(x, idx, upd, update_computation=xo.add, **ROW_ATTRS)
    keep = np.asarray(r)[100:]  # the user keeps a NumPy view, the tensor dies
    want = keep.copy()
    del r
    for _ in range(3):
        r2 = xo.scatter(x, idx, 2 * upd, update_computation=xo.add, **ROW_ATTRS)
        assert not np.shares_memory(np.asarray(r2), keep)
        np.testing.assert_array_equal(keep, want)
        del r2


def test_pool_threads_never_share_a_live_buffer():
    import sys
    import threading
    from xops.kernels import pool

    sizes = [_pool_size(k) for k in (2, 3, 4)]
    errors = []

    def work(tid):
        rng = np.random.default_rng(tid)
        for i in range(300):
            live = [pool.empty(int(rng.choice(sizes)), np.uint8) for _ in range(3)]
            for j, a in enumerate(live):
                a.fill((tid * 7 + j) % 251)
            for j, a in enumerate(live):
                if not (a == (tid * 7 + j) % 251).all():
                    errors.append((tid, i))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert pool.stats()["free_bytes"] <= pool.MAX_FREE_BYTES


def test_pool_keeps_at_most_max_free_bytes(monkeypatch):
    from xops.kernels import pool

    monkeypatch.setattr(pool, "MAX_FREE_BYTES", 3 * _pool_size(5))
    a = pool.empty(_pool_size(6), np.uint8)
    del a
    b = pool.empty(_pool_size(6), np.uint8)  # takes the only free buffer of its size
    arrays = [pool.empty(_pool_size(5), np.uint8) for _ in range(6)]
    del arrays, b  # trimming goes through every size, the emptied one included
    st = pool.stats()
    assert st["free_bytes"] <= pool.MAX_FREE_BYTES
    pool.clear()
    assert pool.stats()["free_bytes"] == 0
    monkeypatch.setattr(pool, "MAX_FREE_BYTES", 0)  # off: plain np.empty
    assert pool.empty(_pool_size(5), np.uint8).base is None


# ---------------------------------------------------------------------------------------
# JAX cross-checks
# ---------------------------------------------------------------------------------------


def test_gather_scatter_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platforms", "cpu")
    from jax import lax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 3)).astype(np.float32)
    idx = rng.integers(-3, 8, (6, 2)).astype(np.int32)
    dn = lax.GatherDimensionNumbers(
        offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0, 2)
    )
    want = lax.gather(x, idx, dn, (1, 4, 2), mode=lax.GatherScatterMode.CLIP)
    got = xo.gather(x, idx, [1, 2], [0], [0, 2], 1, [1, 4, 2])
    assert_tensor(got, np.asarray(want).reshape(got.shape))
    # scatter-add with in-bounds windows (JAX drops whole windows out of bounds; the
    # spec skips per element, so compare only where both agree: fully in bounds)
    idx = rng.integers(0, 5, (9, 1)).astype(np.int32)
    upd = rng.standard_normal((9, 4, 3)).astype(np.float32)
    sdn = lax.ScatterDimensionNumbers(
        update_window_dims=(1, 2), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    want = lax.scatter_add(x, idx, upd, sdn, mode=lax.GatherScatterMode.FILL_OR_DROP)
    got = xo.scatter(x, idx, upd, [1, 2], [0], [0], 1, update_computation=xo.add)
    assert_tensor(got, np.asarray(want), exact=False, rtol=1e-6, atol=1e-6)
    # out-of-bounds whole windows are dropped by both
    idx2 = np.array([[-1], [5], [2]], np.int32)
    want = lax.scatter(x, idx2, upd[:3], sdn, mode=lax.GatherScatterMode.FILL_OR_DROP)
    got = xo.scatter(x, idx2, upd[:3], [1, 2], [0], [0], 1, update_computation=lambda a, b: b)
    assert_tensor(got, np.asarray(want))


def test_gather_batching_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platforms", "cpu")
    from jax import lax

    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    idx = rng.integers(0, 5, (3, 6, 1)).astype(np.int32)
    dn = lax.GatherDimensionNumbers(
        offset_dims=(2,),
        collapsed_slice_dims=(1,),
        start_index_map=(1,),
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    want = lax.gather(x, idx, dn, (1, 1, 4), mode=lax.GatherScatterMode.CLIP)
    got = xo.gather(
        x,
        idx,
        [2],
        [1],
        [1],
        2,
        [1, 1, 4],
        operand_batching_dims=[0],
        start_indices_batching_dims=[0],
    )
    assert_tensor(got, np.asarray(want))


# ---------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------


def test_gather_grad():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    idx = np.array([[4], [0], [4], [9], [-2]])
    check_grads(lambda t: xo.gather(t, idx, [1], [0], [0], 1, [1, 2]), [x], order=2)


def test_scatter_add_grad():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    u = rng.standard_normal((4, 2))
    idx = np.array([[1, 0], [1, 0], [4, 2], [3, 2]])  # the last window is half out of bounds
    check_grads(
        lambda a, b: xo.scatter(a, idx, b, [1], [0], [0, 1], 1, update_computation=xo.add),
        [x, u],
        order=2,
    )


def test_scatter_overwrite_grad():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3))
    u = rng.standard_normal((4, 3))
    idx = np.array([[1], [3], [1], [7]])
    check_grads(
        lambda a, b: xo.scatter(a, idx, b, update_computation=lambda p, q: q, **ROW_ATTRS), [x, u]
    )


def _scatter_of(body, idx, **attrs):
    attrs = attrs or dict(update_window_dims=[], inserted_window_dims=[0],
                          scatter_dims_to_operand_dims=[0], index_vector_dim=1)  # fmt: skip
    return lambda a, b: xo.scatter(a, idx, b, update_computation=body, **attrs)


@pytest.mark.parametrize(
    "body", [xo.multiply, lambda a, b: xo.add(xo.multiply(a, b), xo.sine(b)), xo.subtract]
)
def test_scatter_any_body_grad(body):
    # duplicate targets (three updates at 1, two at 3), one out of bounds; a zero in the
    # multiply's updates and operand (its gradient needs the products of the others)
    x = np.array([0.5, -1.5, 2.0, 0.0, 1.25])
    u = np.array([2.0, -0.5, 0.0, 3.0, 1.5, -2.0, 0.75])
    idx = np.array([[1], [3], [1], [1], [8], [3], [0]])
    check_grads(_scatter_of(body, idx), [x, u], order=2)


def test_scatter_multiply_grad_values():
    # d/dx[i] = the product of the updates at i; d/du[j] = x[t] times the other updates at
    # t = idx[j]: exact with zeros among them
    x, u = xo.tensor([2.0, 3.0, 5.0]), xo.tensor([0.0, 4.0, 0.5, 7.0])
    idx = np.array([[1], [1], [2], [5]])
    dx, du = xo.grad(lambda a, b: xo.reduce(_scatter_of(xo.multiply, idx)(a, b), 0.0, [0],
                                            xo.add), argnums=(0, 1))(x, u)  # fmt: skip
    np.testing.assert_array_equal(np.asarray(dx), [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(np.asarray(du), [12.0, 0.0, 5.0, 0.0])


def test_scatter_variadic_grad():
    # an argmin-style pair body: the values' minimum, and the index riding along with it
    def body(av, ai, bv, bi):
        take = xo.compare(bv, av, "LT")
        return xo.select(take, bv, av), xo.select(take, bi, ai)

    idx = np.array([[0], [2], [0], [2]])

    def f(v, u):
        (r, _) = xo.scatter([v, xo.tensor([0.0, 1.0, 2.0])], idx,
                            [u, xo.tensor([10.0, 11.0, 12.0, 13.0])],
                            [], [0], [0], 1, update_computation=body)  # fmt: skip
        return r

    check_grads(f, [np.array([1.0, 5.0, 0.5]), np.array([0.25, 2.0, -3.0, 4.0])])


@pytest.mark.parametrize("name", ["max", "min"])
def test_scatter_max_min_grad_vs_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax import lax

    # ties between updates, and between an update and the operand, split evenly (jax's
    # rule); a NaN result sends nothing back; updates out of bounds get nothing
    x = np.array([1.0, 4.0, 2.0, np.nan, 0.0, 3.0])
    u = np.array([4.0, 4.0, 1.0, 7.0, 0.0, -1.0, 9.0, 3.0])
    if name == "min":
        x, u = -x, -u
    idx = np.array([[1], [1], [2], [3], [4], [0], [6], [5]])
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))  # fmt: skip
    jop = lax.scatter_max if name == "max" else lax.scatter_min
    w = np.arange(1.0, 7.0)
    want = jax.grad(lambda a, b: (jop(a, idx, b, dn, mode=lax.GatherScatterMode.FILL_OR_DROP)
                                  * w).sum(), argnums=(0, 1))(x, u)  # fmt: skip
    body = xo.maximum if name == "max" else xo.minimum

    def loss(a, b):
        return xo.reduce(xo.multiply(_scatter_of(body, idx)(a, b), w), 0.0, [0], xo.add)

    got = xo.grad(loss, argnums=(0, 1))(xo.tensor(x), xo.tensor(u))
    for g, e in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-15)
    check_grads(_scatter_of(body, idx), [np.array([0.1, 0.7, -0.3, 0.4, 0.9, -1.1]),
                                         np.array([0.2, 1.5, -0.9, 0.6, 2.0, 0.8, 0.3, 0.0])],
                order=2)  # fmt: skip


# ---------------------------------------------------------------------------------------
# one negative test per constraint label
# ---------------------------------------------------------------------------------------

X3 = np.zeros((3, 4, 2), np.float32)
SI = np.zeros((2, 3, 2), np.int64)
G = dict(
    offset_dims=[2, 3],
    collapsed_slice_dims=[0],
    start_index_map=[1, 0],
    index_vector_dim=2,
    slice_sizes=[1, 2, 2],
)

GATHER_BAD = [
    ("C1", dict(G, offset_dims=[2])),
    ("C2", dict(G, index_vector_dim=4)),
    ("C3", dict(G, start_index_map=[1])),
    ("C4", dict(G, offset_dims=[3, 2])),
    ("C5", dict(G, offset_dims=[2, 4])),
    ("C6", dict(G, collapsed_slice_dims=[0, 0], offset_dims=[2])),
    ("C7", dict(G, collapsed_slice_dims=[3])),
    ("C8", dict(G, slice_sizes=[2, 2, 2])),
    ("C9", dict(G, start_index_map=[1, 1])),
    ("C10", dict(G, start_index_map=[1, 5])),
    ("C11", dict(G, slice_sizes=[1, 2])),
    ("C12", dict(G, slice_sizes=[1, 5, 2])),
    ("I2", None),
    ("I3", dict(G, offset_dims=[[2]])),
    ("I6", dict(G, index_vector_dim=[2])),
    ("I8", dict(G, indices_are_sorted="yes")),
    (
        "B1",
        dict(
            G,
            collapsed_slice_dims=[0],
            operand_batching_dims=[0],
            start_indices_batching_dims=[0],
            offset_dims=[2],
        ),
    ),
    ("B2", dict(G, operand_batching_dims=[2, 1], start_indices_batching_dims=[0, 1])),
    ("B3", dict(G, operand_batching_dims=[7], start_indices_batching_dims=[0])),
    (
        "B4",
        dict(
            G,
            offset_dims=[2],
            operand_batching_dims=[2],
            start_indices_batching_dims=[0],
            slice_sizes=[1, 2, 2],
        ),
    ),
    (
        "B5",
        dict(
            G,
            offset_dims=[],
            operand_batching_dims=[1, 2],
            start_indices_batching_dims=[0, 0],
            slice_sizes=[1, 1, 1],
        ),
    ),
    (
        "B6",
        dict(
            G,
            offset_dims=[2],
            operand_batching_dims=[2],
            start_indices_batching_dims=[5],
            slice_sizes=[1, 2, 1],
        ),
    ),
    (
        "B7",
        dict(
            G,
            offset_dims=[2],
            operand_batching_dims=[2],
            start_indices_batching_dims=[2],
            slice_sizes=[1, 2, 1],
        ),
    ),
    (
        "B8",
        dict(
            G,
            offset_dims=[2],
            operand_batching_dims=[2],
            start_indices_batching_dims=[],
            slice_sizes=[1, 2, 1],
        ),
    ),
    (
        "B9",
        dict(
            G,
            offset_dims=[2],
            operand_batching_dims=[2],
            start_indices_batching_dims=[1],
            slice_sizes=[1, 2, 1],
        ),
    ),
    (
        "B10",
        dict(
            G,
            collapsed_slice_dims=[],
            operand_batching_dims=[0],
            start_indices_batching_dims=[1],
            slice_sizes=[1, 2, 2],
        ),
    ),
]


@pytest.mark.parametrize("label,attrs", GATHER_BAD, ids=[b[0] for b in GATHER_BAD])
def test_gather_constraint(label, attrs):
    with raises_spec("gather", label):
        if attrs is None:
            xo.gather(X3, SI.astype(np.float32), **G)
        else:
            xo.gather(X3, SI, **attrs)


XS = np.zeros((3, 4, 2), np.float32)
SIS = np.zeros((2, 3, 2), np.int64)
US = np.zeros((2, 3, 2, 2), np.float32)
S = dict(
    update_window_dims=[2, 3],
    inserted_window_dims=[0],
    scatter_dims_to_operand_dims=[1, 0],
    index_vector_dim=2,
    update_computation=xo.add,
)

SCATTER_BAD = [
    ("C1", ([XS, XS[:2]], SIS, [US, US], S)),
    ("C2", (XS, SIS, US, dict(S, inserted_window_dims=[]))),
    ("C3", ([XS, XS], SIS, [US, US[:1]], S)),
    ("C4", (XS, SIS, US[:, :, :, :1].repeat(5, 3), S)),
    ("C5", ([XS], SIS, [US, US], S)),
    ("C6", (XS, SIS, US.astype(np.float64), S)),
    ("C7", (XS, SIS, US, dict(S, update_window_dims=[3, 2]))),
    ("C8", (XS, SIS, US, dict(S, update_window_dims=[2, 4]))),
    ("C9", (XS, SIS, US, dict(S, inserted_window_dims=[0, 0], update_window_dims=[2]))),
    ("C10", (XS, SIS, US, dict(S, inserted_window_dims=[3]))),
    ("C11", (XS, SIS, US, dict(S, scatter_dims_to_operand_dims=[1]))),
    ("C12", (XS, SIS, US, dict(S, scatter_dims_to_operand_dims=[1, 1]))),
    ("C13", (XS, SIS, US, dict(S, scatter_dims_to_operand_dims=[1, 3]))),
    ("C14", (XS, SIS, US, dict(S, index_vector_dim=4))),
    ("C15", (XS, SIS, US, dict(S, update_computation=lambda a, b: xo.compare(a, b, "LT")))),
    ("C15", (XS, SIS, US, dict(S, update_computation=None))),
    ("C15", (XS, SIS, US, dict(S, update_computation=lambda a: a))),
    ("I2", (XS, SIS.astype(np.float32), US, S)),
    ("I8", (XS, SIS, US, dict(S, indices_are_sorted=1))),
    ("I9", (XS, SIS, US, dict(S, unique_indices=1))),
    ("B1", (XS, SIS, US, dict(S, input_batching_dims=[0], scatter_indices_batching_dims=[0]))),
    (
        "B2",
        (XS, SIS, US, dict(S, input_batching_dims=[2, 1], scatter_indices_batching_dims=[0, 1])),
    ),
    ("B3", (XS, SIS, US, dict(S, input_batching_dims=[5], scatter_indices_batching_dims=[0]))),
    (
        "B4",
        (XS, SIS, US, dict(S, input_batching_dims=[1, 2], scatter_indices_batching_dims=[0, 0])),
    ),
    ("B5", (XS, SIS, US, dict(S, input_batching_dims=[2], scatter_indices_batching_dims=[4]))),
    ("B6", (XS, SIS, US, dict(S, input_batching_dims=[2], scatter_indices_batching_dims=[2]))),
    ("B7", (XS, SIS, US, dict(S, input_batching_dims=[2], scatter_indices_batching_dims=[]))),
    (
        "B8",
        (
            XS,
            SIS,
            US[..., 0],
            dict(
                S,
                update_window_dims=[2],
                input_batching_dims=[2],
                scatter_indices_batching_dims=[1],
            ),
        ),
    ),
    (
        "B9",
        (
            XS,
            SIS,
            US,
            dict(
                S,
                inserted_window_dims=[],
                input_batching_dims=[0],
                scatter_indices_batching_dims=[1],
            ),
        ),
    ),
]


@pytest.mark.parametrize(
    "label,case", SCATTER_BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(SCATTER_BAD)]
)
def test_scatter_constraint(label, case):
    inputs, si, upd, attrs = case
    with raises_spec("scatter", label):
        xo.scatter(inputs, si, upd, **attrs)


def test_scatter_body_may_return_a_python_number_as_reduce_does():
    # a body returning the Python float 0.0 returns a 0-d f32 constant: reduce and
    # scatter take it alike (it used to be a C15 error in scatter only)
    x = xo.tensor(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    idx = xo.tensor(np.array([[0], [2], [2]], np.int64))
    upd = xo.tensor(np.array([5.0, 6.0, 7.0], np.float32))
    zero = lambda a, b: 0.0  # noqa: E731
    np.testing.assert_array_equal(np.asarray(xo.reduce(x, 0.0, [0], zero)), 0.0)
    got = xo.scatter(x, idx, upd, [], [0], [0], 1, update_computation=zero)
    assert got.dtype == xo.as_dtype("f32")
    np.testing.assert_array_equal(np.asarray(got), [0.0, 2.0, 0.0, 4.0])
    ref = scatter_reference(x, idx, upd, [], [0], [0], 1, update_computation=zero)
    np.testing.assert_array_equal(np.asarray(ref), [0.0, 2.0, 0.0, 4.0])
    # the number must still be promotable from the inputs' type (C15, as reduce's C6)
    x64 = xo.tensor(np.array([1.0, 2.0], np.float64))
    with raises_spec("scatter", "C15"):
        xo.scatter(
            x64,
            xo.tensor(np.array([[0]], np.int64)),
            xo.tensor(np.array([5.0])),
            [],
            [0],
            [0],
            1,
            update_computation=zero,
        )
    with raises_spec("reduce", "C6"):
        xo.reduce(x64, 0.0, [0], zero)
