"""Row gathers and row scatters (the row kernels: ``gather_rows`` and the row scatter
path), ``Tensor.index_add_`` (in place where nothing else sees the buffer) and the plan
cache of gather/scatter: values against NumPy on random shapes, with clamped (gather)
and skipped (scatter) out-of-range indices and duplicates, and thread-count independence
in subprocesses."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xops as xo
from xops.autodiff.tape import version
from xops.ops.indexing import gather_reference, scatter_reference

from conftest import bits, raises_spec

DTYPES = [np.float32, np.float64, np.int8, np.int32, np.uint16, np.complex128, np.float16]
INDEX_DTYPES = [np.int32, np.int64, np.uint8, np.int16, np.uint64]


def _row_gather(x, idx, explicit):
    """xo.gather of whole rows of dim 0 at ``idx`` (any batch shape), the index vector
    dim implicit or an explicit trailing 1."""
    b = idx.ndim
    si = idx[..., None] if explicit else idx
    return xo.gather(x, si, list(range(b, b + x.ndim - 1)), [0], [0], b, [1] + list(x.shape[1:]))


@pytest.mark.parametrize("seed", range(12))
def test_row_gather_clamps_like_numpy(seed):
    rng = np.random.default_rng(seed)
    dt = DTYPES[seed % len(DTYPES)]
    idt = INDEX_DTYPES[seed % len(INDEX_DTYPES)]
    rows = int(rng.integers(1, 40))
    shape = (rows,) + tuple(int(n) for n in rng.integers(1, 5, seed % 3))
    x = (rng.standard_normal(shape) * 50).astype(dt)
    lo = 0 if np.dtype(idt).kind == "u" else -9
    hi = min(rows + 9, np.iinfo(idt).max)
    idx = rng.integers(lo, hi, tuple(rng.integers(1, 6, 1 + seed % 2))).astype(idt)
    idx.reshape(-1)[0] = np.iinfo(idt).max  # the index type's extreme
    want = x[np.clip(idx.astype(np.float64), 0, rows - 1).astype(np.int64)]
    for explicit in (False, True):
        got = _row_gather(xo.tensor(x), idx, explicit)
        assert got.dtype == xo.as_dtype(np.dtype(dt).name) and got.shape == want.shape
        np.testing.assert_array_equal(bits(got), bits(want))
    ref = gather_reference(
        x,
        idx,
        list(range(idx.ndim, idx.ndim + x.ndim - 1)),
        [0],
        [0],
        idx.ndim,
        [1] + list(shape[1:]),
    )
    np.testing.assert_array_equal(bits(ref), bits(want))


def test_row_gather_keeps_nan_payloads_and_odd_row_widths():
    # raw bits move: a signalling-NaN payload and -0 survive; rows of 3 f32 (12 bytes)
    # move as 4-byte words, rows of 1 byte as bytes
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    x.view(np.uint32)[4, 1] = 0x7F800001
    x[5, 2] = -0.0
    idx = np.array([4, 5, 4, -3, 99], np.int32)
    np.testing.assert_array_equal(
        bits(_row_gather(xo.tensor(x), idx, False)), bits(x[[4, 5, 4, 0, 9]])
    )
    b = np.arange(7, dtype=np.int8)
    np.testing.assert_array_equal(_row_gather(xo.tensor(b), idx, True).numpy(), b[[4, 5, 4, 0, 6]])


def test_row_gather_of_empty_rows_and_no_indices():
    x = xo.tensor(np.zeros((4, 0), np.float32))
    assert _row_gather(x, np.array([1, 7]), False).shape == (2, 0)
    y = xo.tensor(np.ones((4, 3), np.float32))
    assert _row_gather(y, np.zeros((0,), np.int32), False).shape == (0, 3)


def _row_scatter(x, idx, upd, body):
    b = idx.ndim
    return xo.scatter(
        x,
        idx[..., None],
        upd,
        update_window_dims=list(range(b, b + x.ndim - 1)),
        inserted_window_dims=[0],
        scatter_dims_to_operand_dims=[0],
        index_vector_dim=b,
        update_computation=body,
    )


@pytest.mark.parametrize("seed", range(12))
def test_row_scatter_skips_out_of_range_and_folds_duplicates_in_order(seed):
    rng = np.random.default_rng(100 + seed)
    dt = [np.float32, np.float64, np.int32, np.int64, np.uint8][seed % 5]
    idt = INDEX_DTYPES[seed % len(INDEX_DTYPES)]
    rows = int(rng.integers(8, 60))
    shape = (rows,) + tuple(int(n) for n in rng.integers(1, 4, seed % 3))
    x = (rng.standard_normal(shape) * 20).astype(dt)
    lo = 0 if np.dtype(idt).kind == "u" else -5
    idx = rng.integers(lo, rows + 5, tuple(rng.integers(1, 30, 1 + seed % 2))).astype(idt)
    idx.reshape(-1)[::3] = idx.reshape(-1)[0] if 0 <= int(idx.reshape(-1)[0]) < rows else 1
    upd = (rng.standard_normal(idx.shape + shape[1:]) * 20).astype(dt)
    flat_i = idx.reshape(-1).astype(np.float64)
    keep = (flat_i >= 0) & (flat_i < rows)
    rows_i = flat_i[keep].astype(np.int64)
    flat_u = upd.reshape((-1,) + shape[1:])[keep]
    added = x.copy()
    np.add.at(added, rows_i, flat_u)
    last = x.copy()
    last[rows_i] = flat_u  # NumPy's assignment: the last duplicate wins
    biggest = x.copy()
    np.maximum.at(biggest, rows_i, flat_u)
    for body, want in ((xo.add, added), (lambda a, b: b, last), (xo.maximum, biggest)):
        got = _row_scatter(xo.tensor(x), idx, upd, body)
        np.testing.assert_array_equal(bits(got), bits(want))
    ref = scatter_reference(
        x,
        idx[..., None],
        upd,
        list(range(idx.ndim, idx.ndim + x.ndim - 1)),
        [0],
        [0],
        idx.ndim,
        update_computation=xo.add,
    )
    np.testing.assert_array_equal(bits(ref), bits(added))


_THREADS_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import xops as xo
    rng = np.random.default_rng(3)
    n, m = 50000, 40000
    x = rng.standard_normal((n, 4)).astype(np.float32)
    idx = rng.integers(-20, n + 20, m).astype(np.int32)
    idx[::5] = 77  # one row with thousands of updates
    upd = rng.standard_normal((m, 4)).astype(np.float32)
    attrs = dict(update_window_dims=[1], inserted_window_dims=[0],
                 scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    s = xo.scatter(x, idx[:, None], upd, update_computation=xo.add, **attrs)
    g = xo.gather(x, idx, [1], [0], [0], 1, [1, 4])
    t = xo.tensor(x)
    t.index_add_(0, np.clip(idx, 0, n - 1), upd)
    sys.stdout.write(np.concatenate([np.asarray(a).view(np.uint32).reshape(-1)
                                     for a in (s, g, t)]).tobytes().hex())
    """
)


def test_row_kernels_do_not_depend_on_the_thread_count():
    import os

    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        opts = dict(env=env, capture_output=True, text=True, timeout=600)
        run = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], **opts)
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append(run.stdout)
    assert outs[0] == outs[1]
    # and the values are NumPy's (duplicates added in index order, as np.add.at)
    rng = np.random.default_rng(3)
    n, m = 50000, 40000
    x = rng.standard_normal((n, 4)).astype(np.float32)
    idx = rng.integers(-20, n + 20, m).astype(np.int32)
    idx[::5] = 77
    upd = rng.standard_normal((m, 4)).astype(np.float32)
    keep = (idx >= 0) & (idx < n)
    s = x.copy()
    np.add.at(s, idx[keep], upd[keep])
    t = x.copy()
    np.add.at(t, np.clip(idx, 0, n - 1), upd)
    want = np.concatenate(
        [a.view(np.uint32).reshape(-1) for a in (s, x[np.clip(idx, 0, n - 1)], t)]
    )
    assert outs[0] == want.tobytes().hex()


# ---------------------------------------------------------------------------------------
# Tensor.index_add_
# ---------------------------------------------------------------------------------------


def _case(seed=0, rows=200, width=3, m=90, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, width)).astype(dtype)
    idx = rng.integers(0, rows, m).astype(np.int32)
    idx[::4] = 5  # duplicates
    upd = rng.standard_normal((m, width)).astype(dtype)
    want = x.copy()
    np.add.at(want, idx, upd)
    return x, idx, upd, want


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_index_add_matches_add_at_and_returns_self(dtype):
    x, idx, upd, want = _case(dtype=dtype)
    t = xo.tensor(x)
    v0 = version(t)
    out = t.index_add_(0, xo.tensor(idx), xo.tensor(upd))
    assert out is t and version(t) == v0 + 1
    np.testing.assert_array_equal(bits(t), bits(want))


def test_index_add_updates_a_sole_buffer_in_place():
    x, idx, upd, want = _case(1)
    t = xo.tensor(x)
    address = t._value.ctypes.data
    t.index_add_(0, idx, upd)
    t.index_add_(0, idx, upd)
    assert t._value.ctypes.data == address  # no copy: nothing else could see the buffer
    twice = want.copy()
    np.add.at(twice, idx, upd)
    np.testing.assert_array_equal(bits(t), bits(twice))
    # a pooled result (an op's output) is updated in place too
    big = xo.tensor(np.ones((70000, 2), np.float32))
    r = xo.gather(big, np.arange(60000, dtype=np.int32), [1], [0], [0], 1, [1, 2])
    address = r._value.ctypes.data
    r.index_add_(0, np.array([3, 3], np.int32), np.ones((2, 2), np.float32))
    assert r._value.ctypes.data == address
    np.testing.assert_array_equal(r.numpy()[2:5], [[1, 1], [3, 3], [1, 1]])


def test_index_add_in_place_on_a_slice_of_a_pooled_result():
    # the tensor's memory starts inside the pooled buffer (a view of an op's result whose
    # tensor died): the in-place update writes there, not at the buffer's start
    zeros, ones = np.zeros((30000, 16), np.float32), np.ones((30000, 16), np.float32)
    a = xo.add(xo.tensor(zeros), xo.tensor(ones))
    y = a[10000:]
    assert y._value.base is not None  # (a view: else the case tests nothing)
    del a
    y.index_add_(0, np.array([0, 2, 2], np.int32), np.ones((3, 16), np.float32))
    want = np.ones((20000, 16), np.float32)
    want[0] += 1
    want[2] += 2
    np.testing.assert_array_equal(y.numpy(), want)


def test_index_add_copies_on_write_when_the_buffer_is_shared():
    # every other holder of the old buffer keeps the old value: tensors are values
    x, idx, upd, want = _case(2)
    for hold in (
        lambda t: t.detach(),
        lambda t: np.asarray(t),
        lambda t: t.reshape(-1),
        lambda t: memoryview(np.asarray(t)),
    ):
        t = xo.tensor(x)
        held = hold(t)
        before = np.array(held).copy()
        t.index_add_(0, idx, upd)
        np.testing.assert_array_equal(bits(t), bits(want))
        np.testing.assert_array_equal(np.array(held), before)


def test_index_add_other_dims_and_ranks():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 50, 2)).astype(np.float32)
    idx = rng.integers(0, 50, 30)
    upd = rng.standard_normal((3, 30, 2)).astype(np.float32)
    want = x.copy()
    for j, i in enumerate(idx):
        want[:, i] += upd[:, j]
    t = xo.tensor(x)
    t.index_add_(1, idx, upd)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    t = xo.tensor(x)
    t.index_add_(-2, idx, upd)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    v = xo.tensor(np.zeros(4, np.float32))
    v.index_add_(0, np.array([3, 0, 3]), np.array([1.0, 2.0, 4.0], np.float32))
    np.testing.assert_array_equal(v.numpy(), [2, 0, 0, 5])


def test_index_add_errors():
    x, idx, upd, _ = _case(3)
    t = xo.tensor(x)
    with raises_spec("index_add_", "C3"):
        t.index_add_(0, np.array([0, 200]), upd[:2])
    with raises_spec("index_add_", "C3"):
        t.index_add_(0, np.array([-1, 0]), upd[:2])
    with raises_spec("index_add_", "C1"):
        t.index_add_(0, idx, upd.astype(np.float64))
    with raises_spec("index_add_", "C2"):
        t.index_add_(0, idx, upd[:, :2])
    with raises_spec("index_add_", "I2"):
        t.index_add_(0, idx.astype(np.float32), upd)
    with raises_spec("index_add_", "I2"):
        t.index_add_(0, idx.reshape(-1, 2), upd)
    with raises_spec("index_add_", "I3"):
        t.index_add_(2, idx, upd)
    np.testing.assert_array_equal(t.numpy(), x)  # nothing changed by a refused call


def test_index_add_refuses_while_recording_and_bumps_the_version():
    x, idx, upd, want = _case(4)
    w = xo.tensor(x, requires_grad=True)
    with raises_spec("index_add_", "grad"):
        w.index_add_(0, idx, upd)
    with raises_spec("index_add_", "grad"):
        xo.tensor(x).index_add_(0, idx, xo.tensor(upd, requires_grad=True))
    with xo.no_grad():  # as PyTorch: a leaf may be updated under no_grad
        w.index_add_(0, idx, upd)
    np.testing.assert_array_equal(bits(w.detach()), bits(want))
    # a node that saved the tensor before the update makes backward raise
    c = xo.tensor(x)
    loss = (w * c).sum()
    c.index_add_(0, idx, upd)
    with pytest.raises(xo.SpecError, match="^backward: one of the tensors"):
        loss.backward()


# ---------------------------------------------------------------------------------------
# plan cache
# ---------------------------------------------------------------------------------------


def test_cached_plans_still_check_every_call():
    x = xo.tensor(np.ones((5, 3), np.float32))
    idx = xo.tensor(np.array([1, 2], np.int32))
    for _ in range(2):
        assert xo.gather(x, idx, [1], [0], [0], 1, [1, 3]).shape == (2, 3)
        with raises_spec("gather", "C12"):
            xo.gather(x, idx, [1], [0], [0], 1, [1, 4])
        with raises_spec("gather", "I7"):
            xo.gather(x, idx, [1], [0], [0], 1, [1, 3.0])
        with raises_spec("gather", "I8"):
            xo.gather(x, idx, [1], [0], [0], 1, [1, 3], indices_are_sorted=1)
    upd = xo.tensor(np.ones((2, 3), np.float32))
    attrs = ([1], [0], [0], 1)
    for _ in range(2):
        assert xo.scatter(x, idx, upd, *attrs, update_computation=xo.add).shape == (5, 3)
        with raises_spec("scatter", "C15"):
            xo.scatter(x, idx, upd, *attrs, update_computation=None)
        with raises_spec("scatter", "C4"):
            xo.scatter(
                x, idx, xo.tensor(np.ones((2, 6), np.float32)), *attrs, update_computation=xo.add
            )
