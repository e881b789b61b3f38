"""Convolution kernels. ``xops.ops.convolution`` turns a convolution into a batched
matrix multiply (NumPy's BLAS) with one of two packings:

* ``im2col`` (columns): copy every window of the *padded* input (the spec's
  ``padded_lhs``: padding and lhs-dilation holes already materialised as zeros) into a
  matrix whose rows are (channel, kernel tap) and whose columns are output positions —
  or the transpose of that ("im2row"), when the kernel is wider than the output.
  Then ``weights @ columns``.
* ``window_sum`` (kn2row): first ``Y = weights @ input`` at every *input* position
  (rows = (output feature, kernel tap)), then each output element sums, over the
  kernel taps, the Y entry its window reads — through an offset table that sends
  padding cells and dilation holes to a zero slot. This wins when there are fewer
  output than input features, or with lhs dilation (transposed convolution), since
  it never materialises the zeros.

``im2col`` only copies bits, so it runs on unsigned words of the element's width
(float32 as uint32; float64, int64 and complex64 as uint64; complex128 as two float64
passes into interleaved columns): two specialisations cover every type.
``window_sum`` adds, so it is typed: float32 and float64 (complex sums run on their
real and imaginary lanes), int64 only for integer sums that float64 cannot hold exactly.

All offsets are unsigned (uint64): with signed indices Numba must handle negative
(wrap-around) indexing on every access, which stops LLVM from vectorising the copy
loops (measured 5-10x slower).
"""

import numpy as np
from numba import prange

from .config import kernel, scalar


@scalar
def _copy_grid(src, dst, s0, e0, n_a, src_a, dst_a, n_b, src_b, dst_b, unit):
    """``dst[e0 + a*dst_a + b*dst_b] = src[s0 + a*src_a + b*src_b]`` for a < n_a, b < n_b:
    one of im2col's two loop orders (``unit``: both inner steps are 1, a plain copy loop
    apart so that LLVM vectorises it)."""
    for a in range(n_a):
        s = s0 + a * src_a
        e = e0 + a * dst_a
        if unit:
            for b in range(n_b):
                dst[e + b] = src[s + b]
        else:
            for b in range(n_b):
                dst[e + b * dst_b] = src[s + b * src_b]


@kernel
def im2col(
    src, plane, table, kw_n, kw_step, ow_n, ow_step, dst, d0, d_n, d_c, d_k, d_p, n_chan, inner_k
):
    """Output-parallel: iteration ``i`` = (image ``n``, channel ``c``) writes only the
    entries of its own (n, c) — element (n, c, k, p) sits at
    ``d0 + n*d_n + c*d_c + k*d_k + p*d_p`` and (c, k) -> row is one-to-one — so no two
    iterations write the same word and the result does not depend on the thread count.

    ``src``: the padded image planes (N*C planes of ``plane`` words), flat. Kernel tap
    k = ko * kw_n + kw, output position p = oo * ow_n + ow (row-major; the last spatial
    dim innermost); the tap reads plane word ``table[ko, oo] + kw*kw_step + ow*ow_step``.
    ``inner_k``: loop over kw innermost (contiguous writes when d_k == 1) instead of ow.
    """
    u = np.uint64
    n_ko, n_oo = table.shape
    n_planes = src.size // plane
    kw_n_, kw_step_, ow_n_, ow_step_ = u(kw_n), u(kw_step), u(ow_n), u(ow_step)
    d_k_, d_p_ = u(d_k), u(d_p)
    unit = (d_k == 1 and kw_step == 1) if inner_k else (d_p == 1 and ow_step == 1)
    for i in prange(n_planes):
        n = i // n_chan
        c = i - n * n_chan
        src0 = u(i) * u(plane)
        dst0 = u(d0 + n * d_n + c * d_c)
        for ko in range(n_ko):
            for oo in range(n_oo):
                s0 = src0 + table[ko, oo]
                e0 = dst0 + u(ko) * kw_n_ * d_k_ + u(oo) * ow_n_ * d_p_
                if inner_k:
                    _copy_grid(src, dst, s0, e0, ow_n_, ow_step_, d_p_, kw_n_, kw_step_, d_k_, unit)
                else:
                    _copy_grid(src, dst, s0, e0, kw_n_, kw_step_, d_k_, ow_n_, ow_step_, d_p_, unit)


@kernel
def window_sum(y, table, out):
    """Output-parallel: iteration ``i`` = (image ``n``, output feature ``o``) writes only
    ``out[n, o, :]``: ``out[n, o, p] = sum_k y[o*K + k, n, table[k, p]]``, summed in
    increasing k (a fixed order: the result does not depend on the thread count).

    ``y``: (O*K, N, L+1), every kernel tap's products with every input position of
    every image, slot L zero; ``table``: (K, P) unsigned offsets (uint32 unless a plane
    has 2**32 elements), L for padding cells and dilation holes.
    """
    n_img, n_out, n_pos = out.shape
    n_taps = table.shape[0]
    for i in prange(n_img * n_out):
        n = i // n_out
        o = i - n * n_out
        row = out[n, o]
        for p in range(n_pos):
            row[p] = 0
        for k in range(n_taps):
            yk = y[o * n_taps + k, n]
            tk = table[k]
            for p in range(n_pos):
                row[p] += yk[tk[p]]
