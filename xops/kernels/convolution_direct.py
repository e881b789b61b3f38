"""A direct convolution kernel for few input features, where packing around a GEMM
costs more than the arithmetic (``xops.ops._convolution_direct`` picks it): stride 1,
no dilation, padding >= 0, float32/float64.

The first layer of an image network (one grey or three RGB channels) contracts only
C*K = 9 to 27 products per output: a GEMM over so few rows runs far below its peak and
im2col writes K copies of the input first. Here each output plane is summed straight
from a zero-padded copy of its image's planes, each tap one contiguous run of vector
multiply-adds in L1.

The adds run in a fixed order that names no thread: the results are the same for any
thread count. No FMA contraction (no fastmath): each product is rounded, then added.
Indices are unsigned (uint64), as in ``xops.kernels.convolution``: signed indices keep
LLVM from vectorising the loops.
"""

import numpy as np
from numba import prange

from .config import kernel


@kernel
def direct_few_channels(x, wf, offs, lo_h, lo_w, row, out_w, xp, out):
    """Output-parallel: iteration ``n`` (an image) writes only ``out[n]`` and its own
    scratch ``xp[n]``.

    ``x`` (N, C, H, W); ``wf`` (O, T): the weights (O, C, KH, KW) flat, T = C*KH*KW
    taps; ``row``, ``out_w``: WP and OW; ``out`` (N, O, OH*OW): the output (N, O, OH,
    OW), OH = HP - KH + 1 and OW = WP - KW + 1 (stride 1). Each plane is summed at WP
    columns a row in a scratch plane of the iteration, so that each tap adds one
    contiguous run ``acc[e] += w * xp[e + offset]`` (the columns past OW are scratch;
    the last row's are never written), then its OW columns copied out (in L1): the
    result is C-contiguous, which the ops after a convolution (a bias, a relu) read
    fastest; ``xp`` (N, C*HP*WP): image n's planes with ``lo_h`` rows
    and ``lo_w`` columns of zeros before them (HP x WP each, the rest zeros too);
    ``offs`` (T,): tap t's offset c*HP*WP + kh*WP + kw.

    ``out[n, o, i, j] = 0 + w[o, 0, 0, 0] * xp[...] + w[o, 0, 0, 1] * xp[...] + ...``:
    over input features, then kernel rows, then kernel columns, each product rounded and
    added in that order (four taps a pass over the row: the same adds in the same
    order). With one input feature that is ``window_sum``'s order (its taps in
    increasing order, starting from +0); a padding cell adds w * 0 (+-0, or NaN for an
    infinite or NaN weight, as window_sum's zero slot gives).
    """
    u = np.uint64
    n_img, n_chan, n_h, n_w = x.shape
    n_out, n_taps = wf.shape
    plane = xp.shape[1] // n_chan
    n_wp, n_hp = u(row), u(plane // row)
    n_oh = out.shape[2] // out_w
    run = u(n_oh * row - (row - out_w))  # past it: the last row's scratch columns
    zero = out.dtype.type(0)
    for n in prange(n_img):
        a = np.empty(n_oh * row, out.dtype)  # (the plane being summed, WP columns a row)
        xn = xp[n]
        for e in range(n_chan * plane):
            xn[u(e)] = zero
        for c in range(n_chan):
            for h in range(n_h):
                if u(h + lo_h) < n_hp:
                    d = u(c * plane) + u(h + lo_h) * n_wp + u(lo_w)
                    src = x[n, c, h]
                    for j in range(min(u(n_w), n_wp - u(lo_w))):
                        xn[d + u(j)] = src[u(j)]
        for o in range(n_out):
            wo = wf[o]
            t = 0
            if n_taps >= 4:
                w0, w1, w2, w3 = wo[0], wo[1], wo[2], wo[3]
                x0, x1, x2, x3 = xn[offs[0] :], xn[offs[1] :], xn[offs[2] :], xn[offs[3] :]
                for e in range(run):
                    a[e] = (((zero + w0 * x0[e]) + w1 * x1[e]) + w2 * x2[e]) + w3 * x3[e]
                t = 4
            else:
                for e in range(run):
                    a[e] = zero
            while t + 4 <= n_taps:
                w0, w1, w2, w3 = wo[t], wo[t + 1], wo[t + 2], wo[t + 3]
                x0, x1 = xn[offs[t] :], xn[offs[t + 1] :]
                x2, x3 = xn[offs[t + 2] :], xn[offs[t + 3] :]
                for e in range(run):
                    a[e] = (((a[e] + w0 * x0[e]) + w1 * x1[e]) + w2 * x2[e]) + w3 * x3[e]
                t += 4
            while t < n_taps:
                w0, x0 = wo[t], xn[offs[t] :]
                for e in range(run):
                    a[e] += w0 * x0[e]
                t += 1
            dst = out[n, o]
            for i in range(n_oh):
                src = a[u(i) * n_wp :]
                d = i * out_w
                for j in range(out_w):
                    dst[u(d + j)] = src[u(j)]
