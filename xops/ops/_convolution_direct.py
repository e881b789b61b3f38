"""A path tried by ``_convolution_impl`` before its packings: a direct kernel for few
input features (``xops.kernels.convolution_direct``), for two spatial dims, float32/
float64 work, no groups, stride 1, no dilation, padding >= 0 and a kernel no wider than
the output (window reversal is already applied to ``w``): an image network's first
layer of one grey channel (the kernel takes up to four: three RGB channels measured
slower than the packings). Every other call returns None and runs the packings. Its
kernel gradient (a kernel as large as the image) was tried as a direct kernel too and
lost to im2row's GEMMs; im2col in pieces of images on both threads (one single-threaded
GEMM per image, session 12: commit 3eb66b1) lost or tied idle against the packings
(conv_fwd_cifar_b64 2.30 against 1.56 ms median: a pool thread that wakes late) and
was removed.
"""

import functools

import numpy as np

from ..kernels import convolution_direct as K
from ..kernels import pool as _pool

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


def try_direct(lhs_c, w, a, work, batch, chan, groups, n_out):
    """The (batch, n_out, *out_spatial) convolution of ``lhs_c`` (batch, chan, *in) and
    ``w`` (n_out, chan, *kernel) in ``work`` (a view with strided rows), or None where
    the direct kernel does not apply."""
    if len(a.in_spatial) != 2 or work not in (np.float32, np.float64) or groups != 1:
        return None
    (oh, ow), (kh, kw) = a.out_spatial, a.k_spatial
    if oh * ow == 0 or batch * n_out == 0 or kh * kw == 0 or chan == 0 or ow < kw:
        return None  # (a kernel wider than the output: the kernel gradient, im2row's)
    if any(d != 1 for d in a.lhs_dilation):  # (window_sum never reads the holes)
        return None
    if chan > _FEW_CHANNELS or any(s != 1 for s in (*a.strides, *a.rhs_dilation)):
        return None
    if any(p < 0 for pair in a.padding for p in pair):
        return None
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
    return out


@functools.lru_cache(maxsize=16)
def _tap_offsets(chan, kh, kw, hp, wp):
    """Tap (c, i, j)'s offset c*hp*wp + i*wp + j in a padded image, taps flat."""
    c, i, j = np.meshgrid(np.arange(chan), np.arange(kh), np.arange(kw), indexing="ij")
    offs = np.ascontiguousarray((c * hp * wp + i * wp + j).reshape(-1), np.uint64)
    offs.flags.writeable = False
    return offs
