"""Register-blocked direct convolutions for many features (float32, two spatial dims,
stride 1, no dilation, a 3 x 3 kernel; AVX-512): the mid-size layers, where im2col
writes C*K copies of the input (19 MB on a (64, 32, 16, 16) batch) that the GEMM then
reads back from memory.

* ``conv3x3_blocked`` (the forward, and so the input gradient, a 3 x 3 convolution of
  the cotangent): each call of its micro-kernel keeps a block of ``_OB`` output
  features x R <= 3 output rows x 16 output columns in registers (24 or fewer
  accumulators) and runs over every input feature and kernel tap: per tap one
  unaligned vector load per row, one broadcast weight per output feature and R*_OB
  fused multiply-adds (a row's last vector partial: its lanes past the row are
  computed from the next words and never stored).
* ``wgrad3x3_blocked`` (the kernel gradient: a 3 x 3 output, a "kernel" as large as
  the image): a block of 3 output features x 9 taps of 16-lane sums in registers, run
  over the input features and the kernel's rows, the lanes added as a tree at the end.
  With 8 lanes (AVX2, 16 registers) a block of 4 features x one tap row (12 sums) a
  call, the row's three input vectors held and the cotangents streamed.

The micro-kernels are LLVM IR written here (``numba.extending.intrinsic``): Numba's
arrays cannot be kept in registers, and LLVM's vectoriser does not block loops this
way. On the 2-core AVX-512 EPYC one core runs the forward at ~99 GFLOP/s (OpenBLAS's
sgemm: 85-100) and the kernel gradient at ~90.

Order of the sums: each forward output starts at +0 and adds, for each input feature,
each kernel row and column in turn, ``w * x`` as one fused multiply-add: the order in
which OpenBLAS's sgemm sums the im2col path's products (the same bits on every shape
tested, not a promise). The kernel gradient sums 16 lanes in order of (feature, kernel
row, vector), then the lanes as a tree, per chunk of features. Neither order names a
thread: the results are the same for any thread count.
"""

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .config import kernel, renamed

_LANES = 16  # float32 lanes of one AVX-512 vector
_OB = 8  # output features per block (the weights are packed in blocks of _OB)


def _data(context, builder, arr, *values):
    """The data pointers of the intrinsic's array arguments ``values`` (of type ``arr``)."""
    return [context.make_array(arr)(context, builder, v).data for v in values]


def _fma(builder, vec):
    """LLVM's fused multiply-add on ``vec`` (16 or 8 float32 lanes), declared in the
    module."""
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec, vec, vec]), f"llvm.fma.v{vec.count}f32"
    )


def _micro(n_rows, n_lanes=_LANES, n_feat=_OB):
    """The micro-kernel for R = ``n_rows`` output rows (a 3 x 3 kernel), vectors of
    ``n_lanes`` and F = ``n_feat`` output features (of a packed block of _OB), as an
    intrinsic ``micro(xp, x0, x_c, x_row, wp, w0, out, o0, o_f, o_row, n_chan, n_valid,
    bias, b0)``:

    ``out[o0 + f*o_f + r*o_row + l] = (sum over c < n_chan, kh, kw < 3 of
    wp[w0 + ((c*3 + kh)*3 + kw)*_OB + f] * xp[x0 + c*x_c + (r + kh)*x_row + kw + l])
    + bias[b0 + f]`` for f < F, r < R and the lanes l < ``n_valid`` (<= ``n_lanes``; all
    offsets in elements; the other lanes are computed from the words after the row,
    never stored). The bias is added once, after the sum (a layer's bias: the bits of
    the convolution then an add; a zero bias changes nothing, as the sum, started at
    +0, is never -0).
    """
    f32 = ir.FloatType()
    vec = ir.VectorType(f32, n_lanes)
    i1, i32 = ir.IntType(1), ir.IntType(32)
    arr = types.Array(types.float32, 1, "C")
    ip = types.intp
    sig = types.void(arr, ip, ip, ip, arr, ip, arr, ip, ip, ip, ip, ip, arr, ip)

    def codegen(context, builder, signature, args):
        xp, x0, x_c, x_row, wp, w0, out, o0, o_f, o_row, n_chan, n_valid, bias, b0 = args
        xdata, wdata, odata, bdata = _data(context, builder, arr, xp, wp, out, bias)
        intp = x0.type
        fma = _fma(builder, vec)
        masked_store = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(
                ir.VoidType(), [vec, vec.as_pointer(), i32, ir.VectorType(i1, n_lanes)]
            ),
            f"llvm.masked.store.v{n_lanes}f32.p0v{n_lanes}f32",
        )
        zero = ir.Constant(vec, [0.0] * n_lanes)
        accs = [
            [cgutils.alloca_once_value(builder, zero) for _ in range(n_rows)] for _ in range(n_feat)
        ]
        splat_mask = ir.Constant(ir.VectorType(i32, n_lanes), [0] * n_lanes)
        undef = ir.Constant(vec, ir.Undefined)
        taps = 9 * _OB
        with cgutils.for_range(builder, n_chan) as loop:
            c = loop.index
            xc = builder.gep(xdata, [builder.add(x0, builder.mul(c, x_c))])
            wc = builder.gep(wdata, [builder.add(w0, builder.mul(c, ir.Constant(intp, taps)))])
            for kh in range(3):
                for kw in range(3):
                    xs = []
                    for r in range(n_rows):
                        at = builder.add(
                            builder.mul(ir.Constant(intp, r + kh), x_row), ir.Constant(intp, kw)
                        )
                        ptr = builder.bitcast(builder.gep(xc, [at]), vec.as_pointer())
                        xs.append(builder.load(ptr, align=4))
                    for f in range(n_feat):
                        at = ir.Constant(intp, (kh * 3 + kw) * _OB + f)
                        wv = builder.load(builder.gep(wc, [at]), align=4)
                        wv = builder.insert_element(undef, wv, ir.Constant(i32, 0))
                        wv = builder.shuffle_vector(wv, undef, splat_mask)
                        for r in range(n_rows):
                            acc = builder.load(accs[f][r])
                            builder.store(builder.call(fma, [xs[r], wv, acc]), accs[f][r])
        lane = ir.Constant(ir.VectorType(i32, n_lanes), list(range(n_lanes)))
        valid = builder.trunc(n_valid, i32)
        valid = builder.insert_element(
            ir.Constant(ir.VectorType(i32, n_lanes), ir.Undefined), valid, ir.Constant(i32, 0)
        )
        valid = builder.shuffle_vector(valid, valid, splat_mask)
        mask = builder.icmp_unsigned("<", lane, valid)
        full = builder.icmp_signed("==", n_valid, ir.Constant(intp, n_lanes))

        biases = []
        for f in range(n_feat):
            bv = builder.load(builder.gep(bdata, [builder.add(b0, ir.Constant(intp, f))]))
            bv = builder.insert_element(undef, bv, ir.Constant(i32, 0))
            biases.append(builder.shuffle_vector(bv, undef, splat_mask))

        def store(masked):
            for f in range(n_feat):
                base = builder.add(o0, builder.mul(ir.Constant(intp, f), o_f))
                for r in range(n_rows):
                    at = builder.add(base, builder.mul(ir.Constant(intp, r), o_row))
                    ptr = builder.bitcast(builder.gep(odata, [at]), vec.as_pointer())
                    acc = builder.fadd(builder.load(accs[f][r]), biases[f])
                    if masked:
                        builder.call(masked_store, [acc, ptr, ir.Constant(i32, 4), mask])
                    else:
                        builder.store(acc, ptr, align=4)

        # (whole vectors as plain stores: AVX2's masked store, vmaskmovps, is slow on
        # AMD cores; on C = 3 inputs its 12 stores a call cost as much as the sums)
        with builder.if_else(full) as (whole, partial):
            with whole:
                store(False)
            with partial:
                store(True)
        return context.get_dummy_value()

    def typer(
        typingctx, xp, x0, x_c, x_row, wp, w0, out, o0, o_f, o_row, n_chan, n_valid, bias, b0
    ):
        return sig, codegen

    typer.__name__ = f"micro_r{n_rows}_v{n_lanes}_f{n_feat}"
    return intrinsic(typer)


_M1, _M2, _M3 = _micro(1), _micro(2), _micro(3)
# AVX2 (16 vector registers of 8 lanes): 4 features x 3 rows of accumulators, 3 rows of
# input and a broadcast weight fill them; a block of _OB features takes two calls
_H1, _H2, _H3 = (_micro(r, 8, _OB // 2) for r in (1, 2, 3))


def _conv3x3(x, wp, lo_h, lo_w, hp, row, xp, out, bias):
    """Output-parallel: iteration ``n`` (an image) writes only ``out[n]`` and its own
    scratch ``xp[n]``.

    ``x`` (N, C, H, W); ``wp``: the weights (O, C, 3, 3) packed as (O/_OB, C, 3, 3,
    _OB), flat; ``xp`` (N, C*HP*WP + 16): image n's planes with ``lo_h`` rows and
    ``lo_w`` columns of zeros before them (HP = ``hp`` rows of WP = ``row`` words, the
    rest zeros too; 16 words of slack after them for the lanes past a row's end);
    ``out`` (N, O*OH*OW): the output (N, O, OH, OW), OH = HP - 2, OW = WP - 2;
    ``bias`` (O,): added to each feature's sums after them (zeros: the plain convolution).

    Two variants (made at the end of the module): ``conv3x3_blocked`` (AVX-512: vectors
    of 16 lanes, a block's 8 features per micro-kernel call) and ``conv3x3_blocked8``
    (AVX2: 8 lanes, 4 features per call, two calls a block). Each output's sum runs in
    the same order in both (features, kernel rows, columns): the same bits.
    """
    u = np.uint64
    n_img, n_chan, n_h, n_w = x.shape
    plane = hp * row
    n_oh, n_ow = hp - 2, row - 2
    o_f = n_oh * n_ow
    n_out = out.shape[1] // o_f
    w_blk = n_chan * 9 * _OB
    zero = np.float32(0)
    for n in prange(n_img):
        xn = xp[n]
        for e in range(xn.size):
            xn[u(e)] = zero
        for c in range(n_chan):
            for h in range(n_h):
                if h + lo_h < hp:
                    d = c * plane + (h + lo_h) * row + lo_w
                    src = x[n, c, h]
                    for j in range(min(n_w, row - lo_w)):
                        xn[u(d + j)] = src[u(j)]
        on = out[n]
        for b in range(n_out // _OB):
            for part in range(_OB // _FB):  # (one part on AVX-512, two on AVX2)
                w0 = b * w_blk + part * _FB
                b0 = b * _OB + part * _FB
                o0 = b0 * o_f
                for j0 in range(0, n_ow, _VL):
                    lanes = min(_VL, n_ow - j0)
                    i = 0
                    while i + 3 <= n_oh:
                        _K3(xn, i * row + j0, plane, row, wp, w0, on, o0 + i * n_ow + j0, o_f,
                            n_ow, n_chan, lanes, bias, b0)  # fmt: skip
                        i += 3
                    if i + 2 <= n_oh:
                        _K2(xn, i * row + j0, plane, row, wp, w0, on, o0 + i * n_ow + j0, o_f,
                            n_ow, n_chan, lanes, bias, b0)  # fmt: skip
                        i += 2
                    if i < n_oh:
                        _K1(xn, i * row + j0, plane, row, wp, w0, on, o0 + i * n_ow + j0, o_f,
                            n_ow, n_chan, lanes, bias, b0)  # fmt: skip


# -- the kernel gradient's shape: a 3 x 3 output, a kernel as large as the image ---------


def _hsum(builder, v):
    """The lanes of ``v`` (16 or 8) added as a balanced tree (halves, quarters, ...)."""
    i32 = ir.IntType(32)
    n = v.type.count
    while n > 1:
        n //= 2
        lo = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, n), list(range(n))))
        hi = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, n), list(range(n, 2 * n))))
        v = builder.fadd(lo, hi)
    return builder.extract_element(v, ir.Constant(i32, 0))


def _micro_wgrad(n_o, n_lanes=_LANES, n_i=3):
    """The kernel gradient's micro-kernel for ``n_o`` output features and vectors of
    ``n_lanes`` (16, or 8 on AVX2: one feature's 9 sums then fill its registers), as an
    intrinsic
    ``micro(xp, x0, x_f, x_row, g, g0, g_o, g_f, g_row, n_f, n_kh, n_v, n_tail, out, o0)``:

    ``out[o0 + o*9 + i*3 + j] += sum over f < n_f, kh < n_kh, c < 16*n_v + n_tail of
    g[g0 + o*g_o + f*g_f + kh*g_row + c] * xp[x0 + f*x_f + (kh + i)*x_row + j + c]``
    for o < n_o, i < ``n_i`` (3, or 1: the caller then shifts x0 by i*x_row and o0 by
    3*i to get row i), j < 3 (the row's width 16*n_v + n_tail with 16 lanes,
    n_lanes*n_v + n_tail in general): per (o, i, j) lane sums (fused multiply-adds in order of
    f, kh, then the row's vectors, its last ``n_tail`` < n_lanes columns a vector of their
    own, the other lanes of both operands loaded as +0: no word past the row is
    read, and a lane's sum, +0 from the start, stays as it is), added as a tree at the
    end, then to ``out``.
    """
    f32 = ir.FloatType()
    vec = ir.VectorType(f32, n_lanes)
    arr = types.Array(types.float32, 1, "C")
    ip = types.intp
    sig = types.void(arr, ip, ip, ip, arr, ip, ip, ip, ip, ip, ip, ip, ip, arr, ip)
    i1, i32 = ir.IntType(1), ir.IntType(32)
    mvec = ir.VectorType(i1, n_lanes)

    def codegen(context, builder, signature, args):
        xp, x0, x_f, x_row, g, g0, g_o, g_f, g_row, n_f, n_kh, n_v, n_tail, out, o0 = args
        xdata, gdata, odata = _data(context, builder, arr, xp, g, out)
        intp = x0.type
        fma = _fma(builder, vec)
        masked_load = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(vec, [vec.as_pointer(), i32, mvec, vec]),
            f"llvm.masked.load.v{n_lanes}f32.p0v{n_lanes}f32",
        )
        splat = ir.Constant(ir.VectorType(i32, n_lanes), [0] * n_lanes)
        tail = builder.insert_element(
            ir.Constant(ir.VectorType(i32, n_lanes), ir.Undefined),
            builder.trunc(n_tail, i32),
            ir.Constant(i32, 0),
        )
        tail = builder.shuffle_vector(tail, tail, splat)
        lane = ir.Constant(ir.VectorType(i32, n_lanes), list(range(n_lanes)))
        mask = builder.icmp_unsigned("<", lane, tail)
        has_tail = builder.icmp_signed(">", n_tail, ir.Constant(intp, 0))
        zero = ir.Constant(vec, [0.0] * n_lanes)
        accs = [
            [cgutils.alloca_once_value(builder, zero) for _ in range(3 * n_i)] for _ in range(n_o)
        ]
        lanes = ir.Constant(intp, n_lanes)
        with cgutils.for_range(builder, n_f) as lf:
            xf = builder.gep(xdata, [builder.add(x0, builder.mul(lf.index, x_f))])
            gf = builder.gep(gdata, [builder.add(g0, builder.mul(lf.index, g_f))])
            with cgutils.for_range(builder, n_kh) as lk:
                xk = builder.gep(xf, [builder.mul(lk.index, x_row)])
                gk = builder.gep(gf, [builder.mul(lk.index, g_row)])

                def vector(col, load):
                    if n_i == 1:  # (one row: its 3 inputs held, each cotangent streamed)
                        xs = []
                        for j in range(3):
                            at = builder.gep(xk, [builder.add(col, ir.Constant(intp, j))])
                            xs.append(load(builder.bitcast(at, vec.as_pointer())))
                        for o in range(n_o):
                            at = builder.add(col, builder.mul(ir.Constant(intp, o), g_o))
                            gv = load(builder.bitcast(builder.gep(gk, [at]), vec.as_pointer()))
                            for j in range(3):
                                acc = builder.load(accs[o][j])
                                builder.store(builder.call(fma, [gv, xs[j], acc]), accs[o][j])
                        return
                    gs = []
                    for o in range(n_o):
                        at = builder.add(col, builder.mul(ir.Constant(intp, o), g_o))
                        gs.append(load(builder.bitcast(builder.gep(gk, [at]), vec.as_pointer())))
                    for i in range(n_i):
                        row = builder.add(col, builder.mul(ir.Constant(intp, i), x_row))
                        for j in range(3):
                            at = builder.add(row, ir.Constant(intp, j))
                            xv = load(builder.bitcast(builder.gep(xk, [at]), vec.as_pointer()))
                            for o in range(n_o):
                                acc = builder.load(accs[o][i * 3 + j])
                                builder.store(
                                    builder.call(fma, [gs[o], xv, acc]), accs[o][i * 3 + j]
                                )

                with cgutils.for_range(builder, n_v) as lv:
                    vector(builder.mul(lv.index, lanes), lambda ptr: builder.load(ptr, align=4))
                with builder.if_then(has_tail):
                    vector(
                        builder.mul(n_v, lanes),
                        lambda ptr: builder.call(
                            masked_load, [ptr, ir.Constant(i32, 4), mask, zero]
                        ),
                    )
        for o in range(n_o):
            for t in range(3 * n_i):
                ptr = builder.gep(odata, [builder.add(o0, ir.Constant(intp, o * 9 + t))])
                total = builder.fadd(builder.load(ptr), _hsum(builder, builder.load(accs[o][t])))
                builder.store(total, ptr)
        return context.get_dummy_value()

    def typer(
        typingctx, xp, x0, x_f, x_row, g, g0, g_o, g_f, g_row, n_f, n_kh, n_v, n_tail, out, o0
    ):
        return sig, codegen

    typer.__name__ = f"micro_wgrad_o{n_o}_v{n_lanes}_i{n_i}"
    return intrinsic(typer)


_W1, _W2, _W3 = _micro_wgrad(1), _micro_wgrad(2), _micro_wgrad(3)
_V1 = _micro_wgrad(1, 8)  # (AVX2: 9 accumulators, a cotangent and an input vector)
_RB = 4
_R4 = _micro_wgrad(_RB, 8, 1)  # (AVX2: one kernel row i of 4 features: 12 accumulators)


@kernel
def pad_planes(src, n_f, s_b, s_f, s_h, n_h, n_w, lo_h, lo_w, row, xp):
    """Output-parallel: iteration ``p`` = (b, f), a plane of an (B, F, H, W) array,
    writes only its padded plane ``xp[p]`` (HP x WP flat, WP = ``row``): ``lo_h``
    rows and ``lo_w`` columns of zeros before the plane's, zeros after.

    ``src``: the array's words, flat; element (b, f, h, w) at ``b*s_b + f*s_f + h*s_h
    + w``; H = ``n_h``, W = ``n_w``.
    """
    u = np.uint64
    n_p, n_pl = xp.shape
    n_hp = n_pl // row
    zero = np.float32(0)
    for p in prange(n_p):
        b = p // n_f
        f = p - b * n_f
        dst = xp[p]
        for e in range(n_pl):
            dst[u(e)] = zero
        s0 = b * s_b + f * s_f
        for h in range(n_h):
            if h + lo_h < n_hp:
                d = (h + lo_h) * row + lo_w
                s = s0 + h * s_h
                for j in range(min(n_w, row - lo_w)):
                    dst[u(d + j)] = src[u(s + j)]


def _wgrad3x3(xp, hp, row, g, g_o, g_f, g_row, n_f, n_kh, n_v, n_tail, f_chunk, n_slabs, out):
    """Owner-computes: iteration ``s`` (the output features s*O/S <= o < (s+1)*O/S, S =
    ``n_slabs``) writes only ``out[:, o]`` for its features, in blocks of 3 (the last
    of 2 or 1); every output's sum runs over the same chunks of ``f_chunk`` features in
    the same order whatever the slabs and blocks, so the result does not depend on the
    thread count.

    ``xp`` (B*F, HP*WP): the padded planes of the convolution's input (B its batch, F
    its features); ``g``: the kernel (O, F, KH, KW) flat, element (o, f, kh, kw) at
    ``o*g_o + f*g_f + kh*g_row + kw``, KW = L * ``n_v`` + ``n_tail`` (L the variant's
    lanes); ``out`` (B*O*9,) zeros on entry: the (B, O, 3, 3) result, ``out[b, o, i, j]
    = sum over f, kh, kw of g[o, f, kh, kw] * xp[b, f, kh + i, kw + j]``.

    Two variants (made at the end of the module): ``wgrad3x3_blocked`` (AVX-512: 16
    lanes, features in blocks of 3) and ``wgrad3x3_blocked8`` (AVX2: 8 lanes, one
    feature a call); their lane sums differ, so their last bits may.
    """
    n_out = out.size // (9 * (xp.shape[0] // n_f))
    n_b = xp.shape[0] // n_f
    plane = hp * row
    flat = xp.reshape(-1)
    for s in prange(n_slabs):
        o_lo, o_hi = s * n_out // n_slabs, (s + 1) * n_out // n_slabs
        for f0 in range(0, n_f, f_chunk):
            nf = min(f_chunk, n_f - f0)
            for b in range(n_b):
                x0 = (b * n_f + f0) * plane
                o = o_lo
                if _WIDE:  # (a compile-time constant: the 8-lane variant has no 3-blocks)
                    while o + 3 <= o_hi:
                        _W3(flat, x0, plane, row, g, o * g_o + f0 * g_f, g_o, g_f, g_row, nf,
                            n_kh, n_v, n_tail, out, (b * n_out + o) * 9)  # fmt: skip
                        o += 3
                    if o_hi - o == 2:
                        _W2(flat, x0, plane, row, g, o * g_o + f0 * g_f, g_o, g_f, g_row, nf,
                            n_kh, n_v, n_tail, out, (b * n_out + o) * 9)  # fmt: skip
                        o += 2
                else:  # (4 features, one output row i a call: 7 loads per 12 fma, not 10 per 9)
                    while o + _RB <= o_hi:
                        for i in range(3):
                            _R4(flat, x0 + i * row, plane, row, g, o * g_o + f0 * g_f, g_o,
                                g_f, g_row, nf, n_kh, n_v, n_tail, out,
                                (b * n_out + o) * 9 + 3 * i)  # fmt: skip
                        o += _RB
                while o < o_hi:
                    _WK1(flat, x0, plane, row, g, o * g_o + f0 * g_f, g_o, g_f, g_row, nf, n_kh,
                         n_v, n_tail, out, (b * n_out + o) * 9)  # fmt: skip
                    o += 1


# the forward's variants: (vector lanes, features per micro-kernel call, micro-kernels)
_VL, _FB, _K1, _K2, _K3 = _LANES, _OB, _M1, _M2, _M3  # (each variant binds its own)
conv3x3_blocked = kernel(
    renamed(
        _conv3x3, "conv3x3_blocked", {"_VL": _LANES, "_FB": _OB, "_K1": _M1, "_K2": _M2, "_K3": _M3}
    )
)
conv3x3_blocked8 = kernel(
    renamed(
        _conv3x3,
        "conv3x3_blocked8",
        {"_VL": 8, "_FB": _OB // 2, "_K1": _H1, "_K2": _H2, "_K3": _H3},
    )
)
_WIDE, _WK1 = True, _W1  # (each variant binds its own)
wgrad3x3_blocked = kernel(renamed(_wgrad3x3, "wgrad3x3_blocked", {"_WIDE": True, "_WK1": _W1}))
wgrad3x3_blocked8 = kernel(renamed(_wgrad3x3, "wgrad3x3_blocked8", {"_WIDE": False, "_WK1": _V1}))
# the variants by vector lanes (xops.ops._convolution_direct._cpu_lanes)
CONV3X3 = {16: conv3x3_blocked, 8: conv3x3_blocked8}
WGRAD3X3 = {16: wgrad3x3_blocked, 8: wgrad3x3_blocked8}
