"""Two convolution paths tried by ``_convolution_impl`` before its packings (both for
two spatial dims, float32/float64 work and no groups; every other call returns None and
runs the packings):

* a direct kernel for few input features (``xops.kernels.convolution_direct``): an
  image network's first layer of one grey channel (the kernel takes up to four: three
  RGB channels measured slower than the packings), stride 1, no dilation,
  padding >= 0, a kernel no wider than the output (window reversal is already applied
  to ``w``). Its kernel gradient (a kernel as large as the image) was tried as a direct
  kernel too and lost to im2row's GEMMs: it stays with the packings.
* im2col in pieces of images (``_pieces_im2col``): each piece's columns written into a
  scratch block of its thread and multiplied by the weights while they are still in
  the core's cache, straight into the (N, O, P) result, the pieces shared out by
  ``_blas.run_pieces`` (one BLAS thread each), for the packings in _PIECES_STRATEGIES:
  none by default (see there: idle medians lost; faster under load).
"""

import functools
import math

import numpy as np

from ..kernels import convolution as KC
from ..kernels import convolution_direct as K
from . import _blas
from ._convolution_tables import _geometry_2d, _words, _words_ok

# Few input features: the contraction per output is C*K products, far below a GEMM's
# peak. Measured idle (2-core AVX-512 EPYC, interleaved, median us, old path / this
# kernel): one feature (the digits' first layer) 224 / 180 at batch 32, 311 / 265 at 64,
# 117 / 67 at 8; three (CIFAR's RGB) lost: 1174 / 1416 at batch 64, so one only.
_FEW_CHANNELS = 1
# Work (multiply-adds) per unit handed to the serial/parallel dispatcher: parallel from
# about 1M multiply-adds (config.PARALLEL_THRESHOLD units). Idle, the parallel variant
# won at the digits' batch 32 and 64 (180 vs 205, 265 vs 368 us); under load (other
# processes on the two cores) it lost at batch 64 (523 vs 359 us median).
_MACS_PER_UNIT = 16
# _pieces_im2col: a piece's columns take about this many bytes (within one core's L2:
# 512 KiB on the AVX2 EPYCs, 1 MiB on the AVX-512 ones), and each image has at least
# this many output positions (its GEMM's columns: fewer make thin products).
_PIECE_BYTES = 1 << 18
_MIN_POSITIONS = 100
# ... and at least this many flops: idle, interleaved (two runs, median us, packings /
# pieces), CIFAR's batch 8 (14 MFLOP) lost both ways (fwd 260 / 311, input gradient
# 484 / 998); the digits' second layer (58 MFLOP at batch 32) and the mid layer won or
# tied, and under load the pieces (one BLAS thread each, shared out) held up where
# OpenBLAS's two threads waiting for each other inside one GEMM did not (4.1 vs 0.9 ms).
# The packings the pieces may replace: none by default. Idle, their medians lost or
# tied: input gradients (window_sum / pieces, median us: CIFAR batch 64 4284 / 5753, mid
# 7592 / 8670, digits' second layer 846 / 1008) and forwards (im2col / pieces: digits'
# second layer 636 / 719 at batch 32, 1548 / 1595 at 64; the harness's
# conv_fwd_cifar_b64 1.56 ms with im2col, 2.30 ms in pieces, min 1.60: a pool thread
# that wakes late). Their minima were lower, and under load they held up far better;
# ("im2col",) turns them on for forwards.
_PIECES_MIN_FLOPS = 1 << 25
_PIECES_STRATEGIES = ()


def try_direct(lhs_c, w, a, work, batch, chan, groups, n_out, strategy):
    """The (batch, n_out, *out_spatial) convolution of ``lhs_c`` (batch, chan, *in) and
    ``w`` (n_out, chan, *kernel) in ``work`` (the few-feature kernel's result is a view
    with strided rows), or None where neither path applies. ``strategy`` (the cost
    model's packing): the pieces replace im2col only."""
    if len(a.in_spatial) != 2 or work not in (np.float32, np.float64) or groups != 1:
        return None
    (oh, ow), (kh, kw) = a.out_spatial, a.k_spatial
    if oh * ow == 0 or batch * n_out == 0 or kh * kw == 0 or chan == 0 or ow < kw:
        return None  # (a kernel wider than the output: the kernel gradient, im2row's)
    if any(d != 1 for d in a.lhs_dilation):  # (window_sum never reads the holes)
        return None
    if chan <= _FEW_CHANNELS:
        if any(s != 1 for s in (*a.strides, *a.rhs_dilation)):
            return None
        if any(p < 0 for pair in a.padding for p in pair):
            return None
        return _few_channels(lhs_c, w, a, work, batch, chan, n_out)
    flops = 2 * batch * n_out * oh * ow * chan * kh * kw
    if strategy in _PIECES_STRATEGIES and oh * ow >= _MIN_POSITIONS and flops >= _PIECES_MIN_FLOPS:
        return _pieces_im2col(lhs_c, w, a, work, batch, chan, n_out)
    return None


def _few_channels(lhs_c, w, a, work, batch, chan, n_out):
    """``direct_few_channels``: each image's planes padded once, then every output
    feature summed from them (see the kernel for the order of the adds), at WP columns
    a row: the result is a view of the first OW (a copy would cost a pass over it)."""
    (oh, ow), (kh, kw) = a.out_spatial, a.k_spatial
    (lo_h, _), (lo_w, _) = a.padding
    hp, wp = oh + kh - 1, ow + kw - 1
    x = np.ascontiguousarray(lhs_c, work)  # (one kernel signature for every layout)
    wf = np.ascontiguousarray(w, work).reshape(n_out, chan * kh * kw)
    offs = _tap_offsets(chan, kh, kw, hp, wp)
    xp = np.empty((batch, chan * hp * wp), work)
    out = np.empty((batch, n_out, oh, wp), work)
    macs = batch * n_out * oh * wp * chan * kh * kw
    with np.errstate(all="ignore"):
        K.direct_few_channels(
            macs // _MACS_PER_UNIT,
            x,
            wf,
            offs,
            lo_h,
            lo_w,
            wp,
            ow,
            xp,
            out.reshape(batch, n_out, -1),
        )
    return out[..., :ow]  # a view, as the GEMM paths' results are


@functools.lru_cache(maxsize=16)
def _tap_offsets(chan, kh, kw, hp, wp):
    """Tap (c, i, j)'s offset c*hp*wp + i*wp + j in a padded image, taps flat."""
    c, i, j = np.meshgrid(np.arange(chan), np.arange(kh), np.arange(kw), indexing="ij")
    offs = np.ascontiguousarray((c * hp * wp + i * wp + j).reshape(-1), np.uint64)
    offs.flags.writeable = False
    return offs


def _pieces_im2col(lhs_c, w, a, work, batch, chan, n_out):
    """im2col (``im2col_2d``: no padded copy) and W (O, C*K) @ columns, one piece of
    images at a time: a piece's (images, C*K, P) columns are written into its thread's
    scratch block and multiplied at once (``np.matmul``: one GEMM per image, one BLAS
    thread) into the result's (images, O, P) rows, already in NCHW order.

    Against the one im2col over all images and one multi-threaded GEMM of the packings:
    the columns never leave the core's cache (3.6 MiB at batch 32 on the digits' second
    layer), both the copy and the products run on both threads, and the result needs no
    transposed view. Each image's product is one single-threaded GEMM whichever thread
    takes it: the same bits for any thread count.
    """
    in_hw, k_hw, out_hw = tuple(a.in_spatial), tuple(a.k_spatial), tuple(a.out_spatial)
    src = lhs_c if _words_ok(lhs_c, work) else np.ascontiguousarray(lhs_c, work)
    word = np.uint64 if work.itemsize == 8 else np.uint32
    flat, step = _words(src, word)
    geometry = _geometry_2d(
        in_hw,
        k_hw,
        out_hw,
        tuple(a.strides),
        tuple(a.padding),
        tuple(a.lhs_dilation),
        tuple(a.rhs_dilation),
    )
    c_k, out_pos = chan * math.prod(k_hw), math.prod(out_hw)
    per = max(1, min(batch, _PIECE_BYTES // (c_k * out_pos * work.itemsize)))
    w2 = np.ascontiguousarray(np.reshape(w, (n_out, c_k)), work)
    out = np.empty((batch, n_out, out_pos), work)

    def body(pieces):
        cols = np.empty((per, c_k, out_pos), work)
        words = cols.reshape(-1).view(word)
        for i in pieces:
            n0 = i * per
            n1 = min(n0 + per, batch)
            KC.im2col_2d.serial(
                flat[n0 * step[0] :],
                n1 - n0,
                chan,
                step[0],
                step[1],
                step[2],
                *geometry,
                words,
                c_k * out_pos,
                out_pos,
                out_hw[1],
            )
            np.matmul(w2, cols[: n1 - n0], out=out[n0:n1])

    with np.errstate(all="ignore"):
        _blas.run_pieces(body, -(-batch // per))
    return out.reshape(batch, n_out, *out_hw)
