"""Batch-normalization kernels (batch_norm_training / _inference / _grad).

**Layout.** The feature dimension splits any operand into ``outer x C x inner`` (dims
before it, the feature dim, dims after it): the operand is ``outer * C`` *runs* of
``inner`` contiguous elements, run ``o * C + c`` belonging to feature ``c``. Kernels
take the operand flat (1-D, C-contiguous), so no ``feature_index`` needs a transpose.

**Reductions** (statistics, gradient sums) accumulate *vertically* in float64:
``acc[l] += x[k + l]`` over many equal-width pieces of one feature, so the loop is
vectorised across ``l`` and needs no reassociation. How the pieces are cut depends on
the run length (:func:`plan`, from the shape only, never the thread count):

* long runs (``inner >= LONG_RUN``): each run is cut into ``LONG_RUN``-wide chunks that
  accumulate into that feature's ``LONG_RUN`` lanes; a *run tile* is a block of
  consecutive runs (or a piece of one very long run), read in memory order;
* short runs: a *row* is a contiguous slice of ``w`` elements holding ``fb`` whole runs
  of adjacent features (``iw = inner`` columns each), repeated ``k`` times when a whole
  ``outer`` slice is shorter than ``ROW_COLS``; a *row tile* is a block of rows of one
  width whose column ``j`` belongs to feature ``c0 + (j % (fb * iw)) // iw``.

Each tile writes only its own slot of a partial-results array (owner-computes) and a
serial merge combines the partials in tile order, so results are bit-identical for
any number of threads, serial or parallel. Statistics are two-pass per tile (tile
mean, then squared deviations about it, re-read from cache) merged with Chan et al.'s
``M2 = sum(M2_t + n_t * (mean_t - mean)**2)``: the spec's own two-pass definition,
with no E[x^2] - E[x]^2 cancellation. float32 operands accumulate in float64 too.

**Elementwise** results: runs of at least ``_SCALAR_RUN`` elements go in memory order
with float64 per-feature scalars, computed in float64 and rounded once to the output
type. Shorter runs go by row tiles with per-column copies of the per-feature values in
the operand's own type, and compute *in that type*: f32 operands in f32 (half the cache
traffic, twice the lanes; the mean and offset columns are exact, ``scale / stddev`` and
the gradient coefficients are rounded to f32, then each operation of the formula rounds:
a few f32 units in the last place of its largest term), f64 operands in float64.

**Launch.** Each op's work is a compiled *body* over a range of its iterations (tiles,
run pieces or features: ``body(i0, i1, ...)``, see :func:`_tile_body`), run by
:func:`_launch`: under ``PARALLEL_THRESHOLD`` elements one call over every iteration
(no prange loop compiled), else a parallel loop whose iteration i calls the body over
``[i, i + 1)``. Each kind of tile has its own body and loop: a shape compiles only its own.

**Fused per-feature kernels.** Operands of runs of at least ``FUSED_RUN`` elements
with at least ``FUSED_FEATURES`` features small enough to stay in cache (the rule:
``xops.ops.normalization._fused``), in f32 or f64, skip the plan: one kernel per op
(``train_features`` / ``grad_features``, prange over features) does a feature's whole
work at once: its float64 sums (statistics two-pass about the feature's own mean, no
merge), its coefficients, then its elementwise results from cache. One launch, no
partials, one body and loop per op (4x faster first calls); one fixed order per
feature. Runs shorter than ``STEP_RUN`` take variants without the four-chunk steps.
"""

import functools

import numpy as np
from numba import prange

from . import config as _config
from .config import kernel, scalar

#: runs at least this long use run tiles; also the lane count of a feature's accumulator
LONG_RUN = 64
#: shorter run pieces never take the four-chunk steps of the sums (:func:`_run_sum`)
STEP_RUN = 4 * LONG_RUN
#: width of the rows of short-run tiles (when one outer slice is shorter than this)
ROW_COLS = 1024
#: target elements per tile: a tile stays in L2 between the two passes of the statistics
TILE_ELEMS = 1 << 16
#: runs at least this long: elementwise kernels use per-feature scalars in memory order
_SCALAR_RUN = 16
#: elementwise kernels cut long runs into pieces this long (parallel work units)
RUN_CHUNK = 1 << 14
#: operands of runs at least FUSED_RUN long with at least FUSED_FEATURES features take
#: the fused per-feature kernels (a shape rule: results never depend on thread counts)
FUSED_FEATURES = 8
FUSED_RUN = _SCALAR_RUN

#: columns of a run tile: outer range, feature range, range within the run
O0, O1, RC0, RC1, I0, I1 = range(6)
#: columns of a row tile: row range (into ``starts``), width, first feature, features
#: per row period, columns per feature
ROW0, ROW1, W, C0, FB, IW = range(6)
#: columns of the partials table: first feature, features, elements per feature
PC0, PNF, PCNT = range(3)


class Plan:
    """How the kernels cut an ``outer x C x inner`` operand (see the module docstring).

    ``runs`` (long runs) or ``tiles`` + ``starts`` (short runs) hold the tiles, the
    other is empty; ``parts[t] = (first feature, features, elements per feature)`` of
    tile t's partial results, the same for both kinds.
    """

    __slots__ = ("runs", "tiles", "starts", "parts", "width")

    def __init__(self, runs, tiles, starts, parts):
        for a in (runs, tiles, starts, parts):
            a.flags.writeable = False
        self.runs, self.tiles, self.starts, self.parts = runs, tiles, starts, parts
        self.width = int(parts[:, PNF].max()) if len(parts) else 1

    def partials(self):
        """A new (tiles x features per tile) float64 array for partial results."""
        return np.empty((len(self.parts), self.width))


def _empty(cols):
    return np.zeros((0, cols), np.int64)


def _run_tiles(outer, C, inner):
    """Run tiles in memory order: blocks of whole outer slices, or groups of runs of
    one outer slice, or pieces of one run, each about TILE_ELEMS elements."""
    if inner > TILE_ELEMS:  # pieces of one run
        n_p = -(-inner // TILE_ELEMS)
        o, c, p = (a.reshape(-1) for a in np.indices((outer, C, n_p), dtype=np.int64))
        return np.stack(
            [o, o + 1, c, c + 1, p * TILE_ELEMS, np.minimum(inner, (p + 1) * TILE_ELEMS)], axis=1
        )
    nf = min(C, TILE_ELEMS // inner)
    if nf == C:  # whole outer slices
        ob = max(1, TILE_ELEMS // (C * inner))
        o = np.arange(0, outer, ob, dtype=np.int64)
        t = np.zeros((len(o), 6), np.int64)
        t[:, O0], t[:, O1], t[:, RC1], t[:, I1] = o, np.minimum(outer, o + ob), C, inner
        return t
    o, g = (a.reshape(-1) for a in np.indices((outer, -(-C // nf)), dtype=np.int64))
    return np.stack([o, o + 1, g * nf, np.minimum(C, (g + 1) * nf), 0 * o, 0 * o + inner], axis=1)


def _row_tiles(outer, C, inner):
    """Row tiles for short runs: ``(tiles, starts)``."""
    R = C * inner
    parts, rows = [], []
    n = 0

    def add(starts, w, c0, fb):
        nonlocal n
        if not len(starts):
            return
        per = max(1, TILE_ELEMS // w)
        first = np.arange(0, len(starts), per, dtype=np.int64)
        t = np.empty((len(first), 6), np.int64)
        t[:, ROW0], t[:, ROW1] = n + first, n + np.minimum(first + per, len(starts))
        t[:, W], t[:, C0], t[:, FB], t[:, IW] = w, c0, fb, inner
        parts.append(t)
        rows.append(starts)
        n += len(starts)

    if R >= ROW_COLS:  # fb whole runs of adjacent features per row, one row per slice
        fb = min(C, ROW_COLS // inner)
        o = np.arange(outer, dtype=np.int64) * R
        for c0 in range(0, C, fb):
            add(o + c0 * inner, min(fb, C - c0) * inner, c0, min(fb, C - c0))
    else:  # k whole outer slices per row, then the leftover slices one per row
        k = ROW_COLS // R
        full = outer // k
        add(np.arange(full, dtype=np.int64) * (k * R), k * R, 0, C)
        add(np.arange(full * k, outer, dtype=np.int64) * R, R, 0, C)
    if not parts:
        return _empty(6), np.zeros(0, np.int64)
    return np.concatenate(parts), np.concatenate(rows)


@functools.lru_cache(maxsize=256)
def plan(outer, C, inner):
    """The :class:`Plan` for an ``outer x C x inner`` operand (cached per shape)."""
    if outer * C * inner == 0:
        return Plan(_empty(6), _empty(6), np.zeros(0, np.int64), _empty(3))
    if inner >= LONG_RUN:
        runs = _run_tiles(outer, C, inner)
        parts = np.stack(
            [
                runs[:, RC0],
                runs[:, RC1] - runs[:, RC0],
                (runs[:, O1] - runs[:, O0]) * (runs[:, I1] - runs[:, I0]),
            ],
            axis=1,
        )
        return Plan(runs, _empty(6), np.zeros(0, np.int64), parts)
    tiles, starts = _row_tiles(outer, C, inner)
    per_row = tiles[:, W] // (tiles[:, FB] * tiles[:, IW]) * tiles[:, IW]
    parts = np.stack(
        [tiles[:, C0], tiles[:, FB], (tiles[:, ROW1] - tiles[:, ROW0]) * per_row], axis=1
    )
    return Plan(_empty(6), tiles, starts, parts)


# ---------------------------------------------------------------------------------------
# Helpers: scalar ones are inlined; a tile's body is a compiled function of its own
# ---------------------------------------------------------------------------------------


def _tile_body(py_func):
    """A body over iterations ``[i0, i1)`` (its first two arguments), serial, compiled
    once per signature: :func:`_launch` calls it or a parallel loop per iteration (with
    ``np.int64`` bounds: a prange index is unsigned, another type compiles it again)."""
    return kernel(py_func).serial


def _launch(count, body, loop, *args):
    """Run ``body`` over iterations ``[0, count)``: under ``PARALLEL_THRESHOLD`` elements
    (``args[0]``, the operand) one call, else ``loop``'s iteration i runs it over [i, i+1)."""
    if args[0].size < _config.PARALLEL_THRESHOLD:
        body(0, count, *args)
    else:
        loop(args[0].size, count, *args)


def _fold(a, base, n):
    """Sum of a[base:base+n] by pairwise halving, in place (vectorisable, fixed order)."""
    if n == 0:
        return 0.0
    while n > 1:
        h = n // 2
        off = base + n - h
        for i in range(h):
            a[base + i] += a[off + i]
        n -= h
    return a[base]


# compiled once and called, not inlined: two inlined copies cost ~0.25 s of a fused
# kernel's first compile (the call costs nothing measurable: same bits, same times)
_fold = _config._dispatcher(_fold, False)


@scalar
def _row6(table, t):
    """Row t of a six-column tile table, as a tuple."""
    return table[t, 0], table[t, 1], table[t, 2], table[t, 3], table[t, 4], table[t, 5]


@scalar
def _piece(u, nch, C, inner):
    """Piece u of the runs (``nch`` pieces of RUN_CHUNK per run): its feature and its
    element range ``[k0, k1)``."""
    run = u // nch
    k0 = run * inner + (u % nch) * RUN_CHUNK
    return run % C, k0, min(run * inner + inner, k0 + RUN_CHUNK)


@scalar
def _fold_lanes(acc, nf, out, t):
    """``out[t, f]`` = the sum of feature f's LONG_RUN lanes (run tiles)."""
    for f in range(nf):
        out[t, f] = _fold(acc, f * LONG_RUN, LONG_RUN)


@scalar
def _fold_columns(acc, w, fb, iw, out, t):
    """Row tiles: fold the row's repeats into its first ``fb * iw`` columns, then each
    feature's ``iw`` columns into ``out[t, f]``."""
    p = fb * iw
    for m in range(1, w // p):
        for j in range(p):
            acc[j] += acc[m * p + j]
    for f in range(fb):
        out[t, f] = _fold(acc, f * iw, iw)


@scalar
def _feature_columns(vec, w, c0, fb, iw, col):
    """``col[j] = vec[feature of column j]`` for one row tile's columns (nested loops:
    no integer division per column)."""
    j = 0
    for _ in range(w // (fb * iw)):
        for f in range(fb):
            v = vec[c0 + f]
            for _i in range(iw):
                col[j] = v
                j += 1


@scalar
def _feature_column(vec, w, c0, fb, iw, like):
    """A new column array in ``like``'s element type, filled by :func:`_feature_columns`
    (the mean, scale and offset columns of a row tile stay in the operand's type: half
    the L1 traffic for f32)."""
    col = np.empty(w, like.dtype)
    _feature_columns(vec, w, c0, fb, iw, col)
    return col


@scalar
def _three_columns(tiles, t, u, v, z, like):
    """Row tile t's row range and width ``(r0, r1, w)``, and the columns (see
    :func:`_feature_column`) of the feature vectors u, v and z."""
    r0, r1, w, c0, fb, iw = _row6(tiles, t)
    return (
        r0,
        r1,
        w,
        _feature_column(u, w, c0, fb, iw, like),
        _feature_column(v, w, c0, fb, iw, like),
        _feature_column(z, w, c0, fb, iw, like),
    )


# ---------------------------------------------------------------------------------------
# Statistics (batch_norm_training)
# ---------------------------------------------------------------------------------------


@scalar
def _sum4(x, i0, i1, i2, i3):
    """``(x[i0] + x[i1]) + (x[i2] + x[i3])`` in float64 (a step over four runs or rows:
    indices into one array, not four views; see :func:`_run_sum`)."""
    return (np.float64(x[i0]) + np.float64(x[i1])) + (np.float64(x[i2]) + np.float64(x[i3]))


@scalar
def _m2_4(x, i0, i1, i2, i3, mu):
    """The squared deviations from mu of the four elements, summed as :func:`_sum4`."""
    d0 = x[i0] - mu
    d1 = x[i1] - mu
    d2 = x[i2] - mu
    d3 = x[i3] - mu
    return (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)


@scalar
def _run_sum(x, base, n, a):
    """``a[j] += x[base + k + j]`` in float64 over the LONG_RUN-wide chunks of the run
    piece ``x[base:base + n]`` (four chunks per step: a quarter of the lane traffic). A
    step reads one view of its four chunks, indexed: a view per chunk costs LLVM more
    alias checks, and made the gradient sums' loop a third slower."""
    L = LONG_RUN
    k = 0
    while k + 4 * L <= n:
        xs = x[base + k : base + k + 4 * L]
        for j in range(L):
            a[j] += _sum4(xs, j, L + j, 2 * L + j, 3 * L + j)
        k += 4 * L
    _sum_tail(x, base, k, n, a)


@scalar
def _sum_tail(x, base, k, n, a):
    """The rest of :func:`_run_sum` from ``k`` (all of a run shorter than STEP_RUN)."""
    L = LONG_RUN
    while k < n:
        m = L if n - k > L else n - k  # (no min(): one overload less to compile)
        x0 = x[base + k : base + k + m]
        for j in range(m):
            a[j] += x0[j]
        k += m


@scalar
def _run_m2(x, base, n, mu, a):
    """``a[j] += (x[base + k + j] - mu)**2`` over the run piece, as :func:`_run_sum`."""
    L = LONG_RUN
    k = 0
    while k + 4 * L <= n:
        xs = x[base + k : base + k + 4 * L]
        for j in range(L):
            a[j] += _m2_4(xs, j, L + j, 2 * L + j, 3 * L + j, mu)
        k += 4 * L
    _m2_tail(x, base, k, n, mu, a)


@scalar
def _m2_tail(x, base, k, n, mu, a):
    """The rest of :func:`_run_m2` from ``k`` (as :func:`_sum_tail`)."""
    L = LONG_RUN
    while k < n:
        m = L if n - k > L else n - k  # (no min(): one overload less to compile)
        x0 = x[base + k : base + k + m]
        for j in range(m):
            d0 = x0[j] - mu
            a[j] += d0 * d0
        k += m


@scalar
def _moments_run_tile(x, C, inner, runs, t, psum, pm2):
    """Run tile t's sums and squared deviations (see :func:`moments`)."""
    L = LONG_RUN
    o0, o1, c0, c1, i0, i1 = _row6(runs, t)
    n = i1 - i0
    acc = np.zeros((c1 - c0) * L)
    for o in range(o0, o1):
        for c in range(c0, c1):
            _run_sum(x, (o * C + c) * inner + i0, n, acc[(c - c0) * L : (c - c0 + 1) * L])
    _fold_lanes(acc, c1 - c0, psum, t)
    cnt = (o1 - o0) * n
    acc[:] = 0.0
    for o in range(o0, o1):
        for c in range(c0, c1):
            mu = psum[t, c - c0] / cnt
            _run_m2(x, (o * C + c) * inner + i0, n, mu, acc[(c - c0) * L : (c - c0 + 1) * L])
    _fold_lanes(acc, c1 - c0, pm2, t)


@_tile_body
def _moments_rows(t0, t1, x, tiles, starts, psum, pm2):
    """moments for row tiles [t0, t1)."""
    for t in range(t0, t1):
        _moments_row_tile(x, tiles, starts, t, psum, pm2)


@kernel
def _moments_rows_loop(count, x, tiles, starts, psum, pm2):
    """Owner-computes: iteration t reads row tile t and writes only psum[t], pm2[t]."""
    for t in prange(count):
        _moments_rows(np.int64(t), np.int64(t + 1), x, tiles, starts, psum, pm2)


@scalar
def _moments_row_tile(x, tiles, starts, t, psum, pm2):
    """Row tile t's sums and squared deviations (see :func:`moments`)."""
    r0, r1, w, _c0, fb, iw = _row6(tiles, t)
    acc = np.zeros(w)
    r = r0
    while r + 4 <= r1:
        a0, a1, a2, a3 = starts[r], starts[r + 1], starts[r + 2], starts[r + 3]
        for j in range(w):
            acc[j] += _sum4(x, a0 + j, a1 + j, a2 + j, a3 + j)
        r += 4
    while r < r1:
        x0 = x[starts[r] : starts[r] + w]
        for j in range(w):
            acc[j] += x0[j]
        r += 1
    _fold_columns(acc, w, fb, iw, psum, t)
    cnt = (r1 - r0) * (w // (fb * iw)) * iw
    mcol = np.empty(w)
    _feature_columns(psum[t] / cnt, w, 0, fb, iw, mcol)  # the tile's means
    acc[:] = 0.0
    r = r0
    while r + 4 <= r1:
        a0, a1, a2, a3 = starts[r], starts[r + 1], starts[r + 2], starts[r + 3]
        for j in range(w):
            acc[j] += _m2_4(x, a0 + j, a1 + j, a2 + j, a3 + j, mcol[j])
        r += 4
    while r < r1:
        x0 = x[starts[r] : starts[r] + w]
        for j in range(w):
            d0 = x0[j] - mcol[j]
            acc[j] += d0 * d0
        r += 1
    _fold_columns(acc, w, fb, iw, pm2, t)


@_tile_body
def _moments_runs(t0, t1, x, C, inner, runs, psum, pm2):
    """moments for run tiles [t0, t1)."""
    for t in range(t0, t1):
        _moments_run_tile(x, C, inner, runs, t, psum, pm2)


@kernel
def _moments_runs_loop(count, x, C, inner, runs, psum, pm2):
    """Owner-computes: iteration t reads run tile t and writes only psum[t], pm2[t]."""
    for t in prange(count):
        _moments_runs(np.int64(t), np.int64(t + 1), x, C, inner, runs, psum, pm2)


def moments(x, C, inner, plan, psum, pm2):
    """Per-tile sum and sum of squared deviations about the tile's mean (two-pass,
    float64) of each of the tile's features, into ``psum[t, :]`` / ``pm2[t, :]``;
    ``x`` flat, ``plan`` its :class:`Plan` (long runs: run tiles, else row tiles)."""
    r, t, st = plan.runs, plan.tiles, plan.starts
    if len(r):
        _launch(len(r), _moments_runs, _moments_runs_loop, x, C, inner, r, psum, pm2)
    else:
        _launch(len(t), _moments_rows, _moments_rows_loop, x, t, st, psum, pm2)


@kernel
def merge_moments(parts, psum, pm2, mean, var):
    """Per-feature mean and biased variance from the tile partials (Chan's merge).

    Serial by design (call ``.serial``): one fixed order over the tiles; the work is
    O(tiles x features per tile). A feature with no elements gets 0/0 = NaN, as the
    spec's formula does.
    """
    n = np.zeros(mean.size)
    s = np.zeros(mean.size)
    for t in range(parts.shape[0]):
        for f in range(parts[t, 1]):
            s[parts[t, 0] + f] += psum[t, f]
            n[parts[t, 0] + f] += parts[t, 2]
    for c in range(mean.size):
        mean[c] = s[c] / n[c]
    m2 = np.zeros(mean.size)
    for t in range(parts.shape[0]):
        cnt = parts[t, 2]
        for f in range(parts[t, 1]):
            c = parts[t, 0] + f
            d = psum[t, f] / cnt - mean[c]
            m2[c] += pm2[t, f] + cnt * d * d
    for c in range(mean.size):
        var[c] = m2[c] / n[c]


# ---------------------------------------------------------------------------------------
# Gradient sums (batch_norm_grad)
# ---------------------------------------------------------------------------------------


@scalar
def _grad_terms4(x, g, i0, i1, i2, i3, mu):
    """Four elements (of four runs or rows): ``sum g`` and ``sum g * (x - mu)`` in
    float64, in a fixed pairwise order (indices into one array, as :func:`_sum4`)."""
    h0 = np.float64(g[i0])
    h1 = np.float64(g[i1])
    h2 = np.float64(g[i2])
    h3 = np.float64(g[i3])
    return (
        (h0 + h1) + (h2 + h3),
        (h0 * (x[i0] - mu) + h1 * (x[i1] - mu)) + (h2 * (x[i2] - mu) + h3 * (x[i3] - mu)),
    )


@scalar
def _run_grad_sums(x, g, base, n, mu, ag, ac):
    """``ag[j] += g`` and ``ac[j] += g * (x - mu)`` in float64 over the LONG_RUN-wide
    chunks of the run piece ``[base, base + n)``, four chunks per step."""
    L = LONG_RUN
    k = 0
    while k + 4 * L <= n:
        xs = x[base + k : base + k + 4 * L]
        gs = g[base + k : base + k + 4 * L]
        for j in range(L):
            sg, sc = _grad_terms4(xs, gs, j, L + j, 2 * L + j, 3 * L + j, mu)
            ag[j] += sg
            ac[j] += sc
        k += 4 * L
    _grad_sums_tail(x, g, base, k, n, mu, ag, ac)


@scalar
def _grad_sums_tail(x, g, base, k, n, mu, ag, ac):
    """The rest of :func:`_run_grad_sums` from ``k`` (as :func:`_sum_tail`)."""
    L = LONG_RUN
    while k < n:
        m = L if n - k > L else n - k  # (no min(): one overload less to compile)
        x0 = x[base + k : base + k + m]
        g0 = g[base + k : base + k + m]
        for j in range(m):
            h0 = np.float64(g0[j])
            ag[j] += h0
            ac[j] += h0 * (x0[j] - mu)
        k += m


@scalar
def _grad_sums_run_tile(x, g, C, inner, runs, t, mean, psg, psgc):
    """Run tile t's gradient sums (see :func:`grad_sums`)."""
    L = LONG_RUN
    o0, o1, c0, c1, i0, i1 = _row6(runs, t)
    acc_g = np.zeros((c1 - c0) * L)
    acc_c = np.zeros((c1 - c0) * L)
    for o in range(o0, o1):
        for c in range(c0, c1):
            f = slice((c - c0) * L, (c - c0 + 1) * L)
            base = (o * C + c) * inner + i0
            _run_grad_sums(x, g, base, i1 - i0, mean[c], acc_g[f], acc_c[f])
    _fold_lanes(acc_g, c1 - c0, psg, t)
    _fold_lanes(acc_c, c1 - c0, psgc, t)


@_tile_body
def _grad_sums_runs(t0, t1, x, g, C, inner, runs, mean, psg, psgc):
    """grad_sums for run tiles [t0, t1)."""
    for t in range(t0, t1):
        _grad_sums_run_tile(x, g, C, inner, runs, t, mean, psg, psgc)


@kernel
def _grad_sums_runs_loop(count, x, g, C, inner, runs, mean, psg, psgc):
    """Owner-computes: iteration t reads run tile t and writes only psg[t], psgc[t]."""
    for t in prange(count):
        _grad_sums_runs(np.int64(t), np.int64(t + 1), x, g, C, inner, runs, mean, psg, psgc)


@scalar
def _grad_sums_row_tile(x, g, tiles, starts, t, mean, psg, psgc):
    """Row tile t's gradient sums (see :func:`grad_sums`)."""
    r0, r1, w, c0, fb, iw = _row6(tiles, t)
    mcol = np.empty(w)  # float64: x - mean is exact, as in the run tiles
    _feature_columns(mean, w, c0, fb, iw, mcol)
    acc_g = np.zeros(w)
    acc_c = np.zeros(w)
    r = r0
    while r + 4 <= r1:
        a0, a1, a2, a3 = starts[r], starts[r + 1], starts[r + 2], starts[r + 3]
        for j in range(w):
            sg, sc = _grad_terms4(x, g, a0 + j, a1 + j, a2 + j, a3 + j, mcol[j])
            acc_g[j] += sg
            acc_c[j] += sc
        r += 4
    while r < r1:
        a0 = starts[r]
        x0 = x[a0 : a0 + w]
        g0 = g[a0 : a0 + w]
        for j in range(w):
            h0 = np.float64(g0[j])
            acc_g[j] += h0
            acc_c[j] += h0 * (x0[j] - mcol[j])
        r += 1
    _fold_columns(acc_g, w, fb, iw, psg, t)
    _fold_columns(acc_c, w, fb, iw, psgc, t)


@_tile_body
def _grad_sums_rows(t0, t1, x, g, tiles, starts, mean, psg, psgc):
    """grad_sums for row tiles [t0, t1)."""
    for t in range(t0, t1):
        _grad_sums_row_tile(x, g, tiles, starts, t, mean, psg, psgc)


@kernel
def _grad_sums_rows_loop(count, x, g, tiles, starts, mean, psg, psgc):
    """Owner-computes: iteration t reads row tile t and writes only psg[t], psgc[t]."""
    for t in prange(count):
        _grad_sums_rows(np.int64(t), np.int64(t + 1), x, g, tiles, starts, mean, psg, psgc)


def grad_sums(x, g, C, inner, plan, mean, psg, psgc):
    """Per-tile ``sum(g)`` and ``sum(g * (x - mean[c]))`` of each of the tile's
    features, in float64, into ``psg[t, :]`` / ``psgc[t, :]`` (as :func:`moments`)."""
    r, t, st = plan.runs, plan.tiles, plan.starts
    if len(r):
        _launch(len(r), _grad_sums_runs, _grad_sums_runs_loop, x, g, C, inner, r, mean, psg, psgc)
    else:
        _launch(len(t), _grad_sums_rows, _grad_sums_rows_loop, x, g, t, st, mean, psg, psgc)


@kernel
def merge_sums(parts, p, out):
    """``out[c]`` = the sum of feature c's tile partials, in tile order.

    Serial by design (call ``.serial``): one fixed order; O(tiles x features per tile).
    """
    out[:] = 0.0
    for t in range(parts.shape[0]):
        for f in range(parts[t, 1]):
            out[parts[t, 0] + f] += p[t, f]


# ---------------------------------------------------------------------------------------
# Elementwise results
# ---------------------------------------------------------------------------------------


@scalar
def _normalize_run(x, k0, k1, m, a, b, out):
    """``out = (x - m) * a + b`` over ``[k0, k1)`` (one feature's float64 scalars)."""
    xr = x[k0:k1]
    yr = out[k0:k1]
    for i in range(k1 - k0):
        yr[i] = (xr[i] - m) * a + b


@_tile_body
def _normalize_pieces(u0, u1, x, C, inner, nch, mean, a, b, out):
    """normalize for pieces [u0, u1) of the runs (``nch`` pieces per run)."""
    for u in range(u0, u1):
        c, k0, k1 = _piece(u, nch, C, inner)
        _normalize_run(x, k0, k1, mean[c], a[c], b[c], out)


@kernel
def _normalize_pieces_loop(count, x, C, inner, nch, mean, a, b, out):
    """Output-parallel: iteration u writes only piece u of out."""
    for u in prange(count):
        _normalize_pieces(np.int64(u), np.int64(u + 1), x, C, inner, nch, mean, a, b, out)


@_tile_body
def _normalize_rows(t0, t1, x, tiles, starts, mean, a, b, out):
    """normalize for row tiles [t0, t1)."""
    for t in range(t0, t1):
        r0, r1, w, mcol, acol, bcol = _three_columns(tiles, t, mean, a, b, x)
        for r in range(r0, r1):
            xr = x[starts[r] : starts[r] + w]
            yr = out[starts[r] : starts[r] + w]
            for j in range(w):
                yr[j] = (xr[j] - mcol[j]) * acol[j] + bcol[j]


@kernel
def _normalize_rows_loop(count, x, tiles, starts, mean, a, b, out):
    """Output-parallel: iteration t writes only row tile t's rows of out."""
    for t in prange(count):
        _normalize_rows(np.int64(t), np.int64(t + 1), x, tiles, starts, mean, a, b, out)


def _pieces(x, inner):
    """``(count, nch)``: the RUN_CHUNK pieces of x's runs, and the pieces per run."""
    nch = -(-inner // RUN_CHUNK)
    return (x.size // inner) * nch, nch


def normalize(x, C, inner, plan, mean, a, b, out):
    """``out = (x - mean[c]) * a[c] + b[c]`` in float64, rounded once to out's type
    (row tiles of f32: in f32, see the module docstring).

    Runs of at least ``_SCALAR_RUN`` elements go by ``RUN_CHUNK`` pieces of the runs in
    memory order, each a contiguous slice of one feature; shorter runs by the plan's
    row tiles, whose rows partition the operand.
    """
    if inner >= _SCALAR_RUN:
        count, nch = _pieces(x, inner)
        _launch(count, _normalize_pieces, _normalize_pieces_loop, x, C, inner, nch, mean, a, b, out)
    else:
        t, st = plan.tiles, plan.starts
        _launch(len(t), _normalize_rows, _normalize_rows_loop, x, t, st, mean, a, b, out)


@scalar
def _grad_operand_run(x, g, k0, k1, m, p, s, v, out):
    """``out = s * (g - p) - v * (x - m)`` over ``[k0, k1)`` (float64 scalars)."""
    xr = x[k0:k1]
    gr = g[k0:k1]
    yr = out[k0:k1]
    for i in range(k1 - k0):
        yr[i] = s * (gr[i] - p) - v * (xr[i] - m)


@_tile_body
def _grad_operand_pieces(u0, u1, x, g, C, inner, nch, mean, mg, k, kc, out):
    """grad_operand for pieces [u0, u1) of the runs (``nch`` pieces per run)."""
    for u in range(u0, u1):
        c, k0, k1 = _piece(u, nch, C, inner)
        _grad_operand_run(x, g, k0, k1, mean[c], mg[c], k[c], kc[c], out)


@kernel
def _grad_operand_pieces_loop(count, x, g, C, inner, nch, mean, mg, k, kc, out):
    """Output-parallel: iteration u writes only piece u of out."""
    for u in prange(count):
        u0, u1 = np.int64(u), np.int64(u + 1)
        _grad_operand_pieces(u0, u1, x, g, C, inner, nch, mean, mg, k, kc, out)


@_tile_body
def _grad_operand_rows(t0, t1, x, g, tiles, starts, mean, mg, k, kc, out):
    """grad_operand for row tiles [t0, t1)."""
    for t in range(t0, t1):
        r0, r1, w, mcol, pcol, scol = _three_columns(tiles, t, mean, mg, k, x)
        vcol = _feature_column(kc, w, tiles[t, C0], tiles[t, FB], tiles[t, IW], x)
        for r in range(r0, r1):
            xr = x[starts[r] : starts[r] + w]
            gr = g[starts[r] : starts[r] + w]
            yr = out[starts[r] : starts[r] + w]
            for j in range(w):
                yr[j] = scol[j] * (gr[j] - pcol[j]) - vcol[j] * (xr[j] - mcol[j])


@kernel
def _grad_operand_rows_loop(count, x, g, tiles, starts, mean, mg, k, kc, out):
    """Output-parallel: iteration t writes only row tile t's rows of out."""
    for t in prange(count):
        t0, t1 = np.int64(t), np.int64(t + 1)
        _grad_operand_rows(t0, t1, x, g, tiles, starts, mean, mg, k, kc, out)


def grad_operand(x, g, C, inner, plan, mean, mg, k, kc, out):
    """``out = k[c] * (g - mg[c]) - kc[c] * (x - mean[c])``, computed and traversed like
    :func:`normalize`."""
    if inner >= _SCALAR_RUN:
        count, nch = _pieces(x, inner)
        args = (x, g, C, inner, nch, mean, mg, k, kc, out)
        _launch(count, _grad_operand_pieces, _grad_operand_pieces_loop, *args)
    else:
        args = (x, g, plan.tiles, plan.starts, mean, mg, k, kc, out)
        _launch(len(plan.tiles), _grad_operand_rows, _grad_operand_rows_loop, *args)


# ---------------------------------------------------------------------------------------
# Fused per-feature kernels (runs of at least FUSED_RUN, many features)
# ---------------------------------------------------------------------------------------

#: the four-chunk steps in the fused kernels (False in :func:`_short_runs`' variants): a
#: compile-time constant tested in the kernels, so Numba prunes before inlining helpers
_STEPS = True


@_tile_body
def _train_features(c0, c1, x, C, inner, scale, offset, eps, given, out, stats):
    """batch_norm_training's whole work for features [c0, c1), one at a time: sum,
    squared deviations about the mean (the spec's two-pass variance, no merge), the
    statistics rounded to the element type (stored into ``stats``, of x's type), then
    the output. A feature's runs are read three times, the last two from cache.
    ``given``: read them from ``stats`` (inference: :func:`normalize`'s bits)."""
    L = LONG_RUN
    outer = x.size // (C * inner)
    cnt = outer * inner
    acc = np.empty(L)
    for c in range(c0, c1):
        if not given:
            acc[:] = 0.0
            for o in range(outer):
                if _STEPS:
                    _run_sum(x, (o * C + c) * inner, inner, acc)
                else:
                    _sum_tail(x, (o * C + c) * inner, 0, inner, acc)
            mu = _fold(acc, 0, L) / cnt
            acc[:] = 0.0
            for o in range(outer):
                if _STEPS:
                    _run_m2(x, (o * C + c) * inner, inner, mu, acc)
                else:
                    _m2_tail(x, (o * C + c) * inner, 0, inner, mu, acc)
            stats[0, c] = mu  # (rounded once to the element type by the store)
            stats[1, c] = _fold(acc, 0, L) / cnt
        m = np.float64(stats[0, c])
        a = scale[c] / np.sqrt(np.float64(stats[1, c]) + eps)
        for o in range(outer):
            base = (o * C + c) * inner
            _normalize_run(x, base, base + inner, m, a, offset[c], out)


@kernel
def _train_features_loop(count, x, C, inner, scale, offset, eps, given, out, stats):
    """Output-parallel over features: iteration c reads feature c's runs and writes only
    its elements of out and ``stats[:, c]``."""
    for c in prange(count):
        c0, c1 = np.int64(c), np.int64(c + 1)
        _train_features(c0, c1, x, C, inner, scale, offset, eps, given, out, stats)


def train_features(x, C, inner, scale, offset, eps, out, stats, given=False):
    """batch_norm_training for an operand of runs of at least FUSED_RUN elements and at
    least FUSED_FEATURES features, one feature at a time; ``stats[0]`` / ``stats[1]``
    receive the mean and biased variance in x's element type. Each feature's sums run in
    one fixed order, so results do not depend on the thread count. ``given``: stats
    holds the mean and variance (batch_norm_inference: no kernel of its own to compile)."""
    body, loop = _TRAIN_SHORT if inner < STEP_RUN else (_train_features, _train_features_loop)
    _launch(C, body, loop, x, C, inner, scale, offset, eps, bool(given), out, stats)


@_tile_body
def _grad_features(c0, c1, x, g, C, inner, mean, var, scale, eps, out, sums):
    """batch_norm_grad's whole work for features [c0, c1), one at a time: ``sum g`` and
    ``sum g (x - mean)`` in one pass, then grad_operand, its runs in reverse order (the
    last ones read are the ones still in cache: a feature may outgrow L2, see
    ``_FUSED_GRAD_BYTES`` in xops.ops.normalization); ``sums[0, c]`` = grad_scale,
    ``sums[1, c]`` = grad_offset (float64)."""
    L = LONG_RUN
    outer = x.size // (C * inner)
    n = outer * inner
    acc_g = np.empty(L)
    acc_c = np.empty(L)
    for c in range(c0, c1):
        acc_g[:] = 0.0
        acc_c[:] = 0.0
        mu = mean[c]
        for o in range(outer):
            if _STEPS:
                _run_grad_sums(x, g, (o * C + c) * inner, inner, mu, acc_g, acc_c)
            else:
                _grad_sums_tail(x, g, (o * C + c) * inner, 0, inner, mu, acc_g, acc_c)
        sum_g = _fold(acc_g, 0, L)
        inv_std = 1.0 / np.sqrt(var[c] + eps)
        grad_scale = _fold(acc_c, 0, L) * inv_std  # sum(g * xhat)
        k = scale[c] * inv_std
        # k * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * inv_std
        p = sum_g / n
        kc = k * inv_std * (grad_scale / n)
        for o in range(outer - 1, -1, -1):
            base = (o * C + c) * inner
            _grad_operand_run(x, g, base, base + inner, mu, p, k, kc, out)
        sums[0, c] = grad_scale
        sums[1, c] = sum_g


@kernel
def _grad_features_loop(count, x, g, C, inner, mean, var, scale, eps, out, sums):
    """Output-parallel over features: iteration c reads feature c's runs and writes only
    its elements of out and ``sums[:, c]``."""
    for c in prange(count):
        c0, c1 = np.int64(c), np.int64(c + 1)
        _grad_features(c0, c1, x, g, C, inner, mean, var, scale, eps, out, sums)


def grad_features(x, g, C, inner, mean, var, scale, eps, out, sums):
    """batch_norm_grad for an operand of runs of at least FUSED_RUN elements and at
    least FUSED_FEATURES features, one feature at a time (float64 feature vectors; see
    _grad_features); each feature's sums run in one fixed order."""
    body, loop = _GRAD_SHORT if inner < STEP_RUN else (_grad_features, _grad_features_loop)
    _launch(C, body, loop, x, g, C, inner, mean, var, scale, eps, out, sums)


def _short_runs(body, loop):
    """``(body, loop)`` of a fused kernel for runs shorter than STEP_RUN: ``_STEPS =
    False`` prunes the steps that never run there (same results, 30-40% faster compile)."""
    name = body.py_func.__name__
    short = _tile_body(_config.renamed(body.py_func, name + "_short", {"_STEPS": False}))
    loop_fn = loop.py_func
    return short, kernel(_config.renamed(loop_fn, loop_fn.__name__ + "_short", {name: short}))


_TRAIN_SHORT = _short_runs(_train_features, _train_features_loop)
_GRAD_SHORT = _short_runs(_grad_features, _grad_features_loop)
