"""The window geometry that reduce_window and select_and_scatter
(:mod:`xops.ops.windows`) share: their attributes, the result shape (C15), the index
tables and their canonical rank-4 form for the kernels, the tiled layouts of the
table-free kernels, and the padded-input view the gradient rules use.
"""

import builtins

import numpy as np

from ..autodiff.helpers import _on
from ..limits import check_nbytes
from . import movement as _M
from ._core import attr_pairs, attr_sized_ints, compute
from .reduction import _contig, _readonly, _to_kernel, _zeros


def _window_attr(op, label_in, label_len, label_pos, name, value, rank, default):
    labels = (label_in, label_len, label_pos)
    return attr_sized_ints(op, labels, name, value, rank, "rank(operand)", default)


def _padding_attr(op, label_in, label_shape, padding, rank):
    return attr_pairs(op, label_in, label_shape, "padding", padding, rank, "rank(operand)")


def _num_windows(n, window, stride, base_dilation, window_dilation, lo, hi):
    """(C15): the number of windows along one dimension."""
    dilated_input = 0 if n == 0 else (n - 1) * base_dilation + 1
    padded_input = lo + dilated_input + hi
    dilated_window = (window - 1) * window_dilation + 1
    if padded_input <= 0 or dilated_window > padded_input:
        return 0
    return (padded_input - dilated_window) // stride + 1


def _result_shape(shape, wd, ws, bd, wdl, pad):
    """(C15): the number of windows along every dim."""
    return [
        _num_windows(n, w, s, b, d, lo, hi)
        for n, w, s, b, d, (lo, hi) in zip(shape, wd, ws, bd, wdl, pad)
    ]


def _table(n, window, stride, base_dilation, window_dilation, lo, out, op="reduce_window"):
    """t[w, o]: the operand index along one dim of window element w of window o, or -1
    on padding or a base-dilation hole (an empty table when there is no window)."""
    if out == 0:
        return np.zeros((0, 0), np.int64)
    check_nbytes(op, (window, out), 8, "window index table")
    c = (
        np.arange(out, dtype=np.int64)[None, :] * stride
        + np.arange(window, dtype=np.int64)[:, None] * window_dilation
        - lo
    )
    valid = (c >= 0) & (c <= (n - 1) * base_dilation) & (c % base_dilation == 0)
    return np.where(valid, c // base_dilation, -1).astype(np.int64)


def _canonical4(tables, in_shape, out_shape):
    """Merge neighbouring dimensions the window does not touch (identity tables) and
    pad to rank 4 with leading size-1 dims: (tables, in_shape, out_shape), or None if
    more than 4 dimensions remain."""
    dims = []  # [table, n, out]
    for t, n, o in zip(tables, in_shape, out_shape):
        ident = t.shape[0] == 1 and n == o and np.array_equal(t[0], np.arange(n))
        if ident and dims and dims[-1][3]:
            size = dims[-1][1] * n
            dims[-1] = [np.arange(size, dtype=np.int64)[None, :], size, size, True]
        else:
            dims.append([t, n, o, ident])
    if len(dims) > 4:
        return None
    while len(dims) < 4:
        dims.insert(0, [np.zeros((1, 1), np.int64), 1, 1, True])
    return ([_contig(d[0]) for d in dims], [d[1] for d in dims], [d[2] for d in dims])


def _affine_run(col):
    """(a, b, base, step) with col[i] = base + i * step >= 0 for a <= i < b: the run of
    valid entries that starts at the first one and keeps one step ((0, 0, 0, 0) if
    there is none). The window kernel reads that run with no table and no test."""
    valid = np.flatnonzero(col >= 0)
    if valid.size == 0:
        return 0, 0, 0, 0
    a = b = int(valid[0])
    step = int(col[a + 1] - col[a]) if a + 1 < col.size and col[a + 1] >= 0 else 0
    b += 1
    while b < col.size and col[b] >= 0 and col[b] - col[b - 1] == step:
        b += 1
    return a, b, int(col[a]) - a * step, step


def _gather_window(ext, tables, w_index):
    """The values at window element ``w_index`` of every window: ext is the operand
    with one extra slot per dim (index n_d, holding the fill value) that -1 maps to."""
    idx = [
        np.where(t[w] >= 0, t[w], ext.shape[d] - 1) for d, (t, w) in enumerate(zip(tables, w_index))
    ]
    return ext[np.ix_(*idx)] if idx else ext.copy()


def _extended(x, fill):
    """x with one more index along every dim, the new slots holding ``fill``."""
    out = np.empty([n + 1 for n in x.shape], x.dtype)
    out[...] = fill
    out[builtins.tuple(builtins.slice(0, n) for n in x.shape)] = x
    return out


class _Geometry:
    """A window op's geometry along every dim, in terms of the *padded* input ``xp``
    (the operand padded with the init value, base-dilation holes included): window
    position ``w`` of all windows at once is a strided slice of xp (``slot``), whose
    transpose is a strided pad (``slot_t``); ``unpad`` transposes the padding."""

    def __init__(self, shape, wd, ws, bd, wdl, pad):
        self.shape, self.wd, self.ws, self.bd, self.wdl, self.pad = (
            list(shape),
            wd,
            ws,
            bd,
            wdl,
            pad,
        )
        self.out = _result_shape(shape, wd, ws, bd, wdl, pad)
        self.size = [
            lo + ((n - 1) * b + 1 if n else 0) + hi for n, b, (lo, hi) in zip(shape, bd, pad)
        ]

    def positions(self):
        return list(np.ndindex(*self.wd))

    def padded(self, t, fill):
        if all(p == (0, 0) for p in self.pad) and all(b == 1 for b in self.bd):
            return t
        return _M.pad(
            t, fill, [p[0] for p in self.pad], [p[1] for p in self.pad], [b - 1 for b in self.bd]
        )

    def _offsets(self, w):
        return [i * d for i, d in zip(w, self.wdl)]

    def slot(self, tp, w):
        start = self._offsets(w)
        limit = [s + (n - 1) * st + 1 for s, n, st in zip(start, self.out, self.ws)]
        return _M.slice(tp, start, limit, self.ws)

    def slot_t(self, gw, w):
        start = self._offsets(w)
        high = [
            p - s - (n - 1) * st - 1 for p, s, n, st in zip(self.size, start, self.out, self.ws)
        ]
        zero = _on(_M.constant(0, gw._dtype), gw)
        return _M.pad(gw, zero, start, high, [st - 1 for st in self.ws])

    def unpad(self, gxp, dt):
        if 0 in self.shape:
            return _zeros(self.shape, dt)
        if not (all(p == (0, 0) for p in self.pad) and all(b == 1 for b in self.bd)):
            r = len(self.shape)
            gxp = _M.pad(
                gxp,
                _on(_M.constant(0, dt), gxp),
                [-p[0] for p in self.pad],
                [-p[1] for p in self.pad],
                [0] * r,
            )
            if any(b != 1 for b in self.bd):
                gxp = _M.slice(gxp, [0] * r, list(gxp.shape), self.bd)
        return gxp


def _tiling(canon):
    """(k2, k3) when the canonical windows tile the last two dims without overlap: dims
    0 and 1 not windowed, dims 2 and 3 windows of k_d elements every k_d (no padding,
    no dilations; at least one window). Such windows (2x2 / 2 max pooling) take the
    table-free ``*_tiles`` kernels; None otherwise."""
    tables, in4, out4 = canon
    for t, n, o in zip(tables[:2], in4[:2], out4[:2]):
        if t.shape[0] != 1 or n != o or not np.array_equal(t[0], np.arange(n)):
            return None
    ks = []
    for t, o in zip(tables[2:], out4[2:]):
        k = t.shape[0]
        if o == 0 or not np.array_equal(t, np.arange(k)[:, None] + k * np.arange(o)):
            return None
        ks.append(k)
    return ks


def _tile_planes(t, kdt, in4):
    """For the tile kernels: t's values as a read-only (planes, rows, cols) array of
    kernel dtype kdt, and the order of t's leading dims its planes follow (None: row
    major). A transposed result (a convolution's output, and what elementwise ops made
    of it) whose last two dims are the tiled ones and whose planes are contiguous
    blocks is read in its own memory order, with no copy."""
    v = compute(t)
    if (
        v.dtype == kdt
        and v.ndim >= 2
        and v.shape[-2:] == tuple(in4[2:])
        and not v.flags.c_contiguous
    ):
        lead = v.ndim - 2
        perm = [int(d) for d in np.argsort([-abs(s) for s in v.strides[:lead]], kind="stable")] + [
            lead,
            lead + 1,
        ]
        view = np.transpose(v, perm)
        if view.flags.c_contiguous:
            return _readonly(view.reshape(-1, in4[2], in4[3])), perm
    return _to_kernel(t, kdt).reshape(-1, in4[2], in4[3]), None


def _unplanes(a, shape, perm):
    """The inverse of _tile_planes for a kernel result of logical shape ``shape``."""
    if perm is None:
        return a.reshape(shape)
    return np.transpose(a.reshape([shape[d] for d in perm]), np.argsort(perm))


def _runs(table):
    """The affine run of each window element's column (see _affine_run)."""
    return np.array([_affine_run(c) for c in table], np.int64).reshape(-1, 4)
