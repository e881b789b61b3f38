"""Paths tried by ``_convolution_impl`` before its packings, for two spatial dims, no
groups, stride 1, no dilation and padding >= 0 (window reversal is already applied to
``w``); every other call returns None and runs the packings.

First, for float32 and 3 x 3 kernels, the register-blocked kernels of
``xops.kernels.convolution_blocked``: the forward (and the input gradient, itself a
3 x 3 convolution) for output features in blocks of 8 (a count that is not a multiple
of 8 padded with zero features, while that at most multiplies it by 8/3: CIFAR's input
gradient, 3 features, computes 8) and the kernel gradient (a 3 x 3
output, the kernel as large as the image, thin first layers included), in 16-lane
vectors on AVX-512 CPUs and 8-lane ones on AVX2 CPUs (``_cpu_lanes``: the features
Numba compiles for); the forward for any number of input features. Measured against
the packings around OpenBLAS and the few-feature kernel: see ``_blocked_fits``,
``_wgrad_fits`` and docs/kernels.md. Small calls (``_SMALL_MACS``) take them whatever
share of a vector their rows fill, on one thread: no kernel of the packings compiled
for a few small maps.

Otherwise, for one input feature and a kernel no wider than the output, a direct
kernel for few input features (``xops.kernels.convolution_direct``, float32/float64:
the kernel takes up to four; three RGB channels measured slower than the packings).
Its kernel gradient was tried as a direct kernel too and lost to im2row's GEMMs;
im2col in pieces of images on both threads (one single-threaded GEMM per image, session
12: commit 3eb66b1) lost or tied idle against the packings (conv_fwd_cifar_b64 2.30
against 1.56 ms median: a pool thread that wakes late) and was removed."""

import functools

import numba
import numpy as np

from ..kernels import config as _config
from ..kernels import convolution_blocked as KB
from ..kernels import convolution_direct as K
from ..kernels import pool as _pool
from ._convolution_tables import _words, _words_ok

# Few input features: the contraction per output is C*K products, far below a GEMM's
# peak. Measured idle (2-core AVX-512 EPYC, interleaved, median us, old path / this
# kernel): one feature (the digits' first layer) 224 / 180 at batch 32, 311 / 265 at 64,
# 117 / 67 at 8; three (CIFAR's RGB) lost: 1174 / 1416 at batch 64, so one only.
_FEW_CHANNELS = 1
# The kernel gradient's direct kernel sums in chunks of this many features (each
# thread's slab of output features runs over one chunk's input rows, then the next), by
# vector lanes. 16 lanes: on the mid layer 8, 16, 32 and 64 measured within 3% of each
# other (64 fastest on one thread: 7.9 against 8.2 ms; again in session 18: 4, 8 and 64
# within 3% on the mid, CIFAR and digits layers). 8 lanes (a block of 4 features, one
# kernel row a call: the three calls of a block re-read the chunk, in L1 when it is
# small): 4 against 64, compiled for AVX2, kernel alone, medians of 12 x 5 calls, mid
# layer one thread 7.45 -> 6.38 ms, two 4.34-5.47 -> 3.38-4.75 ms, CIFAR (3 x 32 x 9)
# 0.71 -> 0.60 ms, digits 14 x 14 equal (0.72 ms).
_WGRAD_CHUNK = {16: 64, 8: 4}
# Work (multiply-adds) per unit handed to the serial/parallel dispatcher: parallel from
# about 1M multiply-adds (config.PARALLEL_THRESHOLD units). Idle, the parallel variant
# won at the digits' batch 32 and 64 (180 vs 205, 265 vs 368 us); under load (other
# processes on the two cores) it lost at batch 64 (523 vs 359 us median).
_MACS_PER_UNIT = 16
# Calls of at most this many multiply-adds take the blocked kernels whatever share of
# their vectors the rows fill (_blocked_fits, _wgrad_fits): small maps (the main job's
# 4 x 4 second layer, 8 x 8 rows on 16 lanes) then run the kernels the other layers
# compile anyway, instead of compiling the packings' kernels for a few calls.
_SMALL_MACS = 1 << 22


def try_direct(lhs_c, w, a, work, batch, chan, groups, n_out):
    """The (batch, n_out, *out_spatial) convolution of ``lhs_c`` (batch, chan, *in) and
    ``w`` (n_out, chan, *kernel) in ``work`` (a view with strided rows), or None where
    the direct kernel does not apply."""
    route = direct_route(a, work, batch, chan, groups, n_out)
    return None if route is None else run_direct(route, lhs_c, w, a, work, batch, chan, n_out)


def direct_route(a, work, batch, chan, groups, n_out):
    """Which direct kernel takes the convolution (validated attributes ``a``, operands
    of these sizes in ``work``): ("wgrad" | "blocked", serial) or ("few", None), or None
    where none applies. A function of the sizes and this module's switches only (see
    ``stamp``): ``_convolution_impl`` keeps it per convolution."""
    if len(a.in_spatial) != 2 or work not in (np.float32, np.float64) or groups != 1:
        return None
    (oh, ow), (kh, kw) = a.out_spatial, a.k_spatial
    if oh * ow == 0 or batch * n_out == 0 or kh * kw == 0 or chan == 0:
        return None
    if any(d != 1 for d in a.lhs_dilation):  # (window_sum never reads the holes)
        return None
    if any(s != 1 for s in (*a.strides, *a.rhs_dilation)):
        return None
    if any(p < 0 for pair in a.padding for p in pair):
        return None
    small = batch * n_out * oh * ow * chan * kh * kw <= _SMALL_MACS
    if _wgrad_fits(a, work, small):  # (narrow rows: small, on one thread)
        return ("wgrad", _narrow(kw))
    if ow < kw:  # (a kernel wider than the output: the kernel gradient, im2row's)
        return None
    if _blocked_fits(a, work, chan, n_out, small):
        return ("blocked", _narrow(ow))
    if chan > _FEW_CHANNELS:
        return None
    return ("few", None)


def stamp():
    """What ``direct_route`` depends on besides its arguments (tests change these)."""
    return (_SMALL_MACS, _FEW_CHANNELS, _vector_lanes())


def run_direct(route, lhs_c, w, a, work, batch, chan, n_out, bias=None):
    """The convolution by ``route`` (``direct_route``'s choice). ``bias`` (n_out float32
    values, or None): added to each output feature after its sums, where the route is
    the blocked forward; else the result is None (the caller adds it)."""
    kind, serial = route
    if bias is not None:
        return (
            _blocked(lhs_c, w, a, batch, chan, n_out, serial, bias) if kind == "blocked" else None
        )
    if kind == "wgrad":
        return _wgrad(lhs_c, w, a, batch, chan, n_out, serial)
    if kind == "blocked":
        return _blocked(lhs_c, w, a, batch, chan, n_out, serial)
    return _few_channels(lhs_c, w, a, work, batch, chan, n_out)


def _few_channels(lhs_c, w, a, work, batch, chan, n_out):
    """``direct_few_channels``: each image's planes padded once, then every output
    feature summed from them (see the kernel for the order of the adds): the result
    C-contiguous (N, O, OH, OW)."""
    (oh, ow), (kh, kw) = a.out_spatial, a.k_spatial
    (lo_h, _), (lo_w, _) = a.padding
    hp, wp = oh + kh - 1, ow + kw - 1
    x = np.ascontiguousarray(lhs_c, work)  # (one kernel signature for every layout)
    wf = np.ascontiguousarray(w, work).reshape(n_out, chan * kh * kw)
    offs = _tap_offsets(chan, kh, kw, hp, wp)
    xp = _pool.empty((batch, chan * hp * wp), work)  # (recycled: no page faults)
    out = _pool.empty((batch, n_out, oh, ow), work)
    macs = batch * n_out * oh * wp * chan * kh * kw
    K.direct_few_channels(
        macs // _MACS_PER_UNIT, x, wf, offs, lo_h, lo_w, wp, ow, xp, out.reshape(batch, n_out, -1)
    )
    return out


@functools.cache
def _cpu_lanes():
    """float32 lanes of the widest vectors Numba compiles the blocked kernels for: 16
    with AVX-512 (32 registers), 8 with AVX2 and FMA (16 registers), else 0. The
    features are Numba's target's: ``NUMBA_CPU_FEATURES`` where set (Numba then
    compiles for exactly those), else the host CPU's (as Numba does, whatever
    ``NUMBA_CPU_NAME`` says)."""
    import llvmlite.binding as llvm
    from numba.core import config as numba_config

    if numba_config.CPU_FEATURES is not None:
        names = numba_config.CPU_FEATURES.split(",")
        on = {f.strip()[1:] for f in names if f.strip().startswith("+")}
    else:
        on = {name for name, enabled in llvm.get_host_cpu_features().items() if enabled}
    if "avx512f" in on:
        return 16
    return 8 if {"avx2", "fma"} <= on else 0


def _vector_lanes():
    """``_cpu_lanes()`` (a function of its own: tests pick another width here)."""
    return _cpu_lanes()


def _blocked_fits(a, work, chan, n_out, small=False):
    """Whether ``conv3x3_blocked`` (AVX-512) or ``conv3x3_blocked8`` (AVX2) takes the
    (stride 1, undilated, padded >= 0) call: float32, a 3 x 3 kernel, output rows that
    fill at least 3/4 of their vectors (any rows in a ``small`` call) and output
    features in blocks of ``_OB``.

    Narrower rows measured slower than the packings (2-core AVX-512 EPYC, loaded,
    minima, packings / blocked, ms, batch 64, 64 -> 64 features: 7 x 7 3.3 / 4.8, 8 x 8
    5.1 / 5.8; 32 -> 64 at 5 x 5 1.6 / 1.8); the digits CNN's 14 x 14 layer faster
    (0.74 against 1.16 ms at batch 32). Its first layer of one grey feature: with 16
    lanes faster than the few-feature kernel (medians of 300, us, few-feature / blocked:
    82 / 57 at batch 8, 149 / 89 at 32, 250 / 139 at 64), with 8 lanes too since its
    whole vectors are stored unmasked (session 18; compiled for AVX2, medians of 15 x 10
    calls, us: 28 x 28 batch 32 224 / 211, 64 312 / 255, 8 x 8 batch 32 94 / 64; slower
    before, 182-188 / 286-297 at 28 x 28 batch 32, docs/kernels.md)."""
    lanes = _vector_lanes()
    return (
        work == np.float32
        and lanes > 0
        and tuple(a.k_spatial) == (3, 3)
        and (small or _fills_vectors(a.out_spatial[1], lanes))
        and 3 * _padded_features(n_out) <= 8 * n_out
    )


# Output features are computed in blocks of KB._OB (8): a count not a multiple of 8 is
# padded with zero features up to one, computed, and dropped (CIFAR's input gradient:
# 3 features computed as 8), while the padded count is at most 8/3 of the real one.
# CIFAR's input gradient so (harness, medians, packings / blocked, xops / PyTorch):
# AVX-512 batch 8 0.93-1.03 -> 0.73-0.82, batch 64 0.89-0.92 -> 0.59-0.69 (3.4-3.9 ->
# 2.6-2.7 ms); compiled for AVX2 batch 8 1.26-1.46 -> 0.98-1.12, batch 64 1.22-1.28 ->
# 0.94-0.95 (3.04 -> 2.44-2.89 ms).


def _padded_features(n_out):
    """``n_out`` rounded up to a whole number of blocks of KB._OB features."""
    return -(-n_out // KB._OB) * KB._OB


def _fills_vectors(width, lanes):
    """Whether rows of ``width`` elements fill at least 3/4 of the ``lanes``-lane
    vectors that hold them (the blocked kernels' rows: a partial last vector is
    masked)."""
    return 4 * width >= 3 * lanes * -(-width // lanes)


def _narrow(width):
    """Whether rows of ``width`` fill less than 3/4 of their vectors: a small call
    (``_SMALL_MACS``) that the blocked kernels take anyway; it runs on one thread (the
    main job then compiles no parallel variant for its small maps)."""
    return not _fills_vectors(width, _vector_lanes())


def _blocked(lhs_c, w, a, batch, chan, n_out, serial=False, bias=None):
    """``conv3x3_blocked`` (or its 8-lane variant): each image's planes padded once,
    then every block of output features x rows summed in registers (plus ``bias`` per
    feature, after the sums, where given): the result C-contiguous (N, O, OH, OW)."""
    (oh, ow), (lo_h, _), (lo_w, _) = a.out_spatial, *a.padding
    hp, wp = oh + 2, ow + 2
    x = np.ascontiguousarray(lhs_c, np.float32)
    # (O, C, 3, 3) -> (O/_OB, C, 3, 3, _OB): a block's weights for one tap side by side
    ob, n_pad = KB._OB, _padded_features(n_out)
    packed = _pool.empty((n_pad // ob, chan, 3, 3, ob), np.float32)
    if n_pad != n_out:  # zero features up to a whole block, dropped below
        w = np.concatenate([w, np.zeros((n_pad - n_out, chan, 3, 3), np.float32)])
    np.copyto(packed, np.reshape(w, (n_pad // ob, ob, chan, 3, 3)).transpose(0, 2, 3, 4, 1))
    xp = _pool.empty((batch, chan * hp * wp + KB._LANES), np.float32)
    out = _pool.empty((batch, n_pad, oh, ow), np.float32)
    b = np.zeros(n_pad, np.float32)  # (a writeable copy: one kernel signature)
    if bias is not None:
        b[:n_out] = bias
    macs = batch * n_pad * oh * ow * chan * 9
    # (compiled kernels raise no NumPy floating-point warnings: no errstate, ~1.5 us)
    KB.CONV3X3[_vector_lanes()](
        0 if serial else macs // _MACS_PER_UNIT,
        x,
        packed.reshape(-1),
        lo_h,
        lo_w,
        hp,
        wp,
        xp,
        out.reshape(batch, -1),
        b,
    )
    if n_pad != n_out:
        real = _pool.empty((batch, n_out, oh, ow), np.float32)
        np.copyto(real, out[:, :n_out])
        return real
    return out


def _wgrad_fits(a, work, small=False):
    """Whether ``wgrad3x3_blocked`` (AVX-512) or ``wgrad3x3_blocked8`` (AVX2) takes
    the (stride 1, undilated, padded >= 0) call: the kernel gradient of a 3 x 3 kernel
    (a 3 x 3 output, the kernel as large as the image), float32, kernel rows that fill
    at least 3/4 of their vectors (the last vector of a row masked; any rows in a
    ``small`` call). Thin results too:
    CIFAR's first layer (32 x 3 x 9) and the digits CNN's (16 x 1 x 9) measured faster
    here than with im2row's per-feature GEMMs (16 lanes, medians of 300, us, GEMMs /
    blocked: CIFAR batch 8 267-405 / 223-237, batch 64 1592-2020 / 1072-1583; digits
    batch 8 211-220 / 158-160, 32 283-345 / 224-230, 64 454-516 / 200-279; in the
    harness conv_drhs_cifar_b8 312-324 / 203-231, b64 1773-1830 / 748-941)."""
    lanes = _vector_lanes()
    return (
        work == np.float32
        and lanes > 0
        and tuple(a.out_spatial) == (3, 3)
        and (small or _fills_vectors(a.k_spatial[1], lanes))
    )


def _wgrad(lhs_c, w, a, batch, chan, n_out, serial=False):
    """``wgrad3x3_blocked`` (or its 8-lane variant): the input's planes padded once
    (``pad_planes``), then each output feature's 3 x 3 sums over chunks of input
    features: (N', O, 3, 3). Both operands are read in place where their rows are
    contiguous (the gradient's are transposed views of the layer's input and the output
    cotangent)."""
    (kh, kw), (h, w_in), (lo_h, _), (lo_w, _) = a.k_spatial, a.in_spatial, *a.padding
    hp, wp = kh + 2, kw + 2
    x, (s_b, s_f, s_h, _) = _float_words(lhs_c)
    g, (g_o, g_f, g_row, _) = _float_words(w)
    xp = _pool.empty((batch * chan, hp * wp), np.float32)
    units = 0 if serial else batch * n_out * 9 * chan * kh * kw // _MACS_PER_UNIT
    # (parallel from 64K padded words: on the mid layer, 2.6 MB, 0.35 -> 0.20 ms)
    KB.pad_planes(0 if serial else xp.size, x, chan, s_b, s_f, s_h, h, w_in, lo_h, lo_w, wp, xp)
    out = np.zeros((batch, n_out, 3, 3), np.float32)
    slabs = 1 if units < _config.PARALLEL_THRESHOLD else numba.get_num_threads()
    lanes = _vector_lanes()
    KB.WGRAD3X3[lanes](
        units, xp, hp, wp, g, g_o, g_f, g_row, chan, kh, kw // lanes, kw % lanes,
        _WGRAD_CHUNK[lanes], slabs, out.reshape(-1),
    )  # fmt: skip
    return out


def _float_words(v):
    """``v`` (4-D float32) as (flat float32 array spanning it, its element strides),
    read in place where its last dim is contiguous, else from a C-contiguous copy."""
    f32 = np.dtype(np.float32)
    if not _words_ok(v, f32):
        v = np.ascontiguousarray(v, f32)
    return _words(v, np.float32)


@functools.lru_cache(maxsize=16)
def _tap_offsets(chan, kh, kw, hp, wp):
    """Tap (c, i, j)'s offset c*hp*wp + i*wp + j in a padded image, taps flat."""
    c, i, j = np.meshgrid(np.arange(chan), np.arange(kh), np.arange(kw), indexing="ij")
    offs = np.ascontiguousarray((c * hp * wp + i * wp + j).reshape(-1), np.uint64)
    offs.flags.writeable = False
    return offs
