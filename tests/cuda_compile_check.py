"""Compile every CUDA device function and kernel of xops/kernels/cuda to PTX for a real GPU
(cc 8.0), for every element type it serves, with no GPU: the simulator does no typing, this
does (see docs/gpu.md). It needs numba's built-in numba.cuda (numba-cuda's compile_ptx needs
libnvrtc) and a CUDA toolkit's libNVVM. With numba-cuda installed, bypass its redirector by
running Python without site initialisation:

    .venv/bin/python -S tests/cuda_compile_check.py .venv/lib/python3.11/site-packages

Prints the number of failures (0 expected) and each failure; exit status 1 if any.
"""

import os
import sys

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] + sys.argv[1:]
import numpy as np  # noqa: E402
from numba import cuda, types, from_dtype  # noqa: E402

assert cuda.implementation == "Built-in", "run with python -S (see the docstring)"
import xops  # noqa: E402,F401
from xops.kernels.cuda import elementwise as E, linalg as L, movement as M  # noqa: E402


def arr(dt):
    return types.Array(from_dtype(np.dtype(dt)), 1, "C")


SI, UI, FL, B = ["i1", "i2", "i4", "i8"], ["u1", "u2", "u4", "u8"], ["f4", "f8"], ["?"]
C = ["c8", "c16"]
fails = []


def check(name, fn, sig):
    try:
        cuda.compile_ptx(fn, sig, cc=(8, 0))
    except Exception as e:
        fails.append(f"{name} {sig}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")


un = {
    "_neg": SI + UI + FL,
    "_abs": SI + FL,
    "_not_bool": B,
    "_invert": SI + UI,
    "_exp": FL,
    "_log": FL,
    "_sqrt": FL,
    "_tanh": FL,
    "_sin": FL,
    "_cos": FL,
    "_floor": FL,
    "_ceil": FL,
    "_logistic": FL,
    "_rsqrt": FL,
    "_expm1": FL,
    "_log1p": FL,
    "_tan": FL,
    "_erf": FL,
    "_fsign": FL,
    "_round_afz": FL,
    "_round_even": FL,
    "_isign": SI,
    "_to_bool": SI + UI + FL + B,
}


def sc(dt):
    return from_dtype(np.dtype(dt))


def checkd(name, fn, sig):
    try:
        cuda.compile_ptx(fn, sig, device=True, cc=(8, 0))
    except Exception as e:
        fails.append(f"{name} {sig}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")


un["_isfinite"] = FL
un["_to_float"] = SI + UI + FL + B
for fname, dts in un.items():
    for dt in dts:
        checkd(fname, getattr(E, fname), (sc(dt),))
bi = {
    "_add": SI + UI + FL,
    "_sub": SI + UI + FL,
    "_mul": SI + UI + FL,
    "_div": FL,
    "_or": SI + UI + B,
    "_and": SI + UI + B,
    "_xor": SI + UI + B,
    "_fmax": FL,
    "_fmin": FL,
    "_imax": SI + UI,
    "_imin": SI + UI,
    "_sdiv": SI,
    "_udiv": UI,
    "_srem": SI,
    "_urem": UI,
    "_fmod": FL,
    "_atan2": FL,
    "_pow": FL,
}
for fname, dts in bi.items():
    for dt in dts:
        checkd(fname, getattr(E, fname), (sc(dt), sc(dt)))
for fname in ("_eq", "_ne", "_ge", "_gt", "_le", "_lt"):
    for dt in SI + UI + FL + B:
        checkd(fname, getattr(E, fname), (sc(dt), sc(dt)))
for fname, dts in {"_shl": SI + UI, "_sar": SI}.items():
    for dt in dts:
        checkd(fname, getattr(E, fname), (sc(dt), sc(dt), types.int64))
for fname in ("_popcnt", "_clz"):
    for dt in SI + UI:
        checkd(fname, getattr(E, fname), (sc(dt), types.int64))
for dt in SI + UI + FL + B:
    checkd("_select1", E._select1, (types.boolean, sc(dt), sc(dt)))
for dt in SI + UI:
    checkd("_clamp1", E._clamp1, (sc(dt),) * 3)
for dt in FL:
    checkd("_fclamp1", E._fclamp1, (sc(dt),) * 3)
from xops.kernels.cuda import rng as RG, sorting as SO  # noqa: E402

i64, u64, b1 = types.int64, types.uint64, types.boolean
# rng_bit_generator: the block functions (shared with the CPU kernels; the kernels that
# call them need a driver to compile)
checkd("threefry block", RG.K.threefry2x32_block.py_func, (u64,) * 4)
checkd("philox block", RG.K.philox4x32_block.py_func, (u64,) * 6)
check("next_state", RG._next_state, (arr("u8"), u64, arr("u8")))
checkd("sort unravel3", SO._unravel3.py_func, (i64, i64, i64))
check("sort runs", SO._runs, (arr("u8"), arr("i8"), i64, i64, i64))
check("sort merge", SO._merge, (arr("u8"), arr("i8"), arr("u8"), arr("i8"), i64, i64))
# reduce_window / select_and_scatter: whole kernels that call device functions. Typing a
# call compiles the callee for the current device's compute capability, which needs a
# driver: give it cc 8.0 instead (from here on; the checks above run without it).
import numba.cuda.dispatcher as _cuda_dispatcher  # noqa: E402
from xops.kernels.cuda import windows as W  # noqa: E402


class _CC80:
    compute_capability = (8, 0)


_cuda_dispatcher.get_current_device = lambda: _CC80
by_kind = {"bool": B, "si": ["i1", "i8"], "ui": ["u1", "u4", "u8"], "float": FL, "complex": C}
for body, kinds in W._COMBINE.items():
    for kind, fn in kinds.items():
        k = W.reduce_window_kernel(fn)
        for t in by_kind[kind]:
            sig = (arr(t), arr(t), arr("i8"), types.int64, types.int64, arr(t))
            check(f"reduce_window {body}", k.py_func, sig)
for direction, keeps in W._KEEPS.items():
    for body, kind, t in [("add", "float", "f4"), ("add", "si", "i2"), ("maximum", "bool", "?")]:
        k = W.select_and_scatter_kernel(keeps, W._COMBINE[body][kind])
        sig = (arr(t), arr(t), arr(t), arr("i8"), types.int64, types.int64, arr(t))
        check(f"select_and_scatter {direction} {body}", k.py_func, sig)
for body, kind, t in [("add", "ui", "u8"), ("multiply", "float", "f8"), ("or", "si", "i4")]:
    k = W.select_and_scatter_kernel(W._KEEPS["GE"], W._COMBINE[body][kind])
    sig = (arr(t), arr(t), arr(t), arr("i8"), types.int64, types.int64, arr(t))
    check(f"select_and_scatter GE {body}", k.py_func, sig)
from xops.kernels.cuda import normalization as BN  # noqa: E402

i64, f64 = types.int64, types.float64
coef = types.Array(types.float64, 2, "C")
for t in FL:  # the batch norm ops
    x = arr(t)
    check("bn moments", BN._moments.py_func, (x, i64, i64, i64, x, x, x, x, f64, x, i64))
    check("bn normalize", BN._normalize.py_func, (x, i64, i64, x, x, x, x, f64, x))
    sig = (x, x, i64, i64, i64, x, x, x, f64, x, x, coef, x, i64)
    check("bn grad sums", BN._grad_sums.py_func, sig)
    check("bn grad operand", BN._grad_operand.py_func, (x, x, i64, i64, x, coef, x))
    f8x = types.Array(types.float64, 1, "C")  # (narrow operands: float64 work arrays)
    sig = (f8x, f8x, i64, i64, i64, f8x, f8x, f8x, f64, f8x, f8x, coef, f8x, i64)
    check("bn grad sums narrow", BN._grad_sums.py_func, sig)
from xops.kernels.cuda import convolution as CV  # noqa: E402

for a_t, o_t in [(t, t) for t in SI + UI + FL + B] + [
    ("i1", "i4"),
    ("i1", "u4"),
    ("u1", "u2"),
    ("u1", "i2"),
    ("u4", "u8"),
    ("f4", "f8"),
    ("f8", "f4"),
    ("c8", "c8"),
    ("c16", "c16"),
    ("c8", "c16"),
]:
    k = CV._direct(np.dtype(a_t), np.dtype(o_t))
    sig = (arr(a_t), arr(a_t), arr("i8")) + (types.int64,) * 11 + (arr(o_t),)
    check(f"convolution {a_t}->{o_t}", k.py_func, sig)
    part = arr(CV._accumulator(np.dtype(a_t), np.dtype(o_t)))
    for ob in (1, 2, 4) if a_t == "f4" else (4,):
        k = CV._planar(np.dtype(a_t), np.dtype(o_t), ob)
        psig = sig[:3] + (types.int64, part, arr(o_t))
        check(f"convolution planar {ob} {a_t}->{o_t}", k.py_func, psig)
    k = CV._fold(np.dtype(a_t), np.dtype(o_t))
    check(f"convolution fold {a_t}->{o_t}", k.py_func, (part, types.int64, arr(o_t)))
# GEMM, strided copies, pad, fill, reduce fold, elementwise maps (issue 17 performance).
# Kernels that call a device function compile it for the current device's compute
# capability: with no driver, name one (the kernel itself is compiled for cc 8.0 here).
import types as _pytypes  # noqa: E402
from numba.cuda import dispatcher as _dispatcher  # noqa: E402
from xops.kernels.cuda import reduction as RD  # noqa: E402

_dispatcher.get_current_device = lambda: _pytypes.SimpleNamespace(compute_capability=(8, 0))
i64 = types.int64
for dt in SI + UI + FL + C:
    for tm in L.TILES.values():
        check(f"gemm {tm}", L._gemm_source(np.dtype(dt), tm), (arr(dt),) * 3 + (i64,) * 10)
for dt in ["u1", "u2", "u4", "u8"]:
    for r in (1, 3):
        tup = types.UniTuple(i64, r)
        check(f"copy rank {r}", M._copy, (arr(dt), i64, tup, arr(dt), i64, tup, tup))
        check(f"pad rank {r}", M._pad, (arr(dt),) * 3 + (tup,) * 4)
for dt in SI + UI + FL + B:
    check("fill", M._fill, (arr(dt), sc(dt)))
for name, by_kind in RD._BODIES.items():
    for kind, dts in (("bool", B), ("si", SI), ("ui", UI), ("float", FL), ("complex", C)):
        if kind not in by_kind:
            continue
        for dt in dts:
            nt, r = (RD.WIDE, 1) if dt in ("i1", "i4", "u2", "u8", "f4", "?") else (RD.NARROW, 2)
            tup = types.UniTuple(i64, r)
            ordered = kind == "complex" and name in ("maximum", "minimum")
            fold = RD._fold_source(by_kind[kind], np.dtype(dt), nt, ordered)
            sig = (arr(dt),) * 3 + (i64,) * 3 + (types.boolean, sc(dt)) + (tup,) * 4
            check(f"reduce {name} {nt}", fold, sig)
for fn, dt in ((E._exp, "f4"), (E._neg, "i1"), (E._to_bool, "f8")):
    check("map1", E._kernel1(fn).py_func, (arr(dt), arr(dt if fn is not E._to_bool else "?")))
for fn, dt in ((E._add, "f4"), (E._sdiv, "i8"), (E._fmax, "f8"), (E._or, "?")):
    check("map2", E._kernel2(fn).py_func, (arr(dt), arr(dt), i64, i64, arr(dt)))
check("map2p", E._kernel2p(E._shl).py_func, (arr("i4"), arr("i4"), i64, i64, i64, arr("i4")))
check("map1p", E._kernel1p(E._popcnt).py_func, (arr("u8"), i64, arr("u8")))
check(
    "map3",
    E._kernel3(E._select1).py_func,
    (arr("?"), arr("f4"), arr("f4"), i64, i64, i64, arr("f4")),
)
check("map3", E._kernel3(E._fclamp1).py_func, (arr("f8"),) * 3 + (i64,) * 3 + (arr("f8"),))
for dt in UI:  # rng_bit_generator and sort kernels that call the device functions above
    check("threefry", RG._threefry, (arr("u8"), arr(dt), i64, i64, i64, i64, u64, b1))
    check("philox", RG._philox, (arr("u8"), arr(dt), i64, i64, u64, b1))
    sig = (arr(dt), arr("u8"), i64, u64, u64, u64, b1, i64, i64, arr("u8"), arr("i8"))
    check("sort keys", SO._keys, sig)  # keys from raw bits, operands moved as raw bits
    check("sort permute", SO._permute, (arr(dt), arr("i8"), i64, i64, arr(dt)))
check("sort permute", SO._permute, (arr("c16"), arr("i8"), i64, i64, arr("c16")))
# bf16 / f16 (xops/kernels/cuda/narrow.py): decode, correctly rounded encode, 64-bit ints
from xops.kernels.cuda import narrow as NW  # noqa: E402

checkd("narrow round_pack", NW._round_pack.py_func, (i64,) * 7)
checkd("narrow decode", NW._decode.py_func, (i64, i64))
check("narrow decode", NW._decode_k, (arr("u2"), i64, arr("u4")))
check("narrow encode32", NW._encode32_k, (arr("u4"), i64, i64, i64, arr("u2")))
check("narrow encode64", NW._encode64_k, (arr("i8"), i64, i64, i64, arr("u2")))
check("narrow int64", NW._int64_k, (arr("i8"), i64, arr("f8")))
check(
    "map3 u2",
    E._kernel3(E._select1).py_func,
    (arr("?"), arr("u2"), arr("u2")) + (i64,) * 3 + (arr("u2"),),
)
# c64 / c128 (xops/kernels/cuda/_complex_math.py, elementwise's complex_op, complex.py):
# the map kernels over every complex device function, convert, compare, select, c128 moves
from xops.kernels.cuda import _complex_math as CX  # noqa: E402

for c, f in (("c8", "f4"), ("c16", "f8")):
    st = (i64, i64)
    for name, fn in CX.functions(np.dtype(c)).items():
        if name in ("multiply", "divide", "power", "atan2", "maximum", "minimum"):
            check(f"complex {name} {c}", E._kernel2(fn).py_func, (arr(c), arr(c)) + st + (arr(c),))
        elif name == "complex":
            check(f"complex {name} {c}", E._kernel2(fn).py_func, (arr(f), arr(f)) + st + (arr(c),))
        else:
            out = f if name in ("abs", "real", "imag") else c
            check(f"complex {name} {c}", E._kernel1(fn).py_func, (arr(c), arr(out)))
    for fn in (E._add, E._sub):
        check(f"complex map2 {c}", E._kernel2(fn).py_func, (arr(c), arr(c)) + st + (arr(c),))
    check(f"complex negate {c}", E._kernel1(E._neg).py_func, (arr(c), arr(c)))
    for fn in (E._eq, E._ne):
        check(f"complex compare {c}", E._kernel2(fn).py_func, (arr(c), arr(c)) + st + (arr("?"),))
    sel = (arr("?"), arr(c), arr(c)) + (i64,) * 3 + (arr(c),)
    check(f"complex select {c}", E._kernel3(E._select1).py_func, sel)
    fns = CX.functions(np.dtype(c))
    clamp = E._complex_clamp(fns["maximum"], fns["minimum"])
    check(f"complex clamp {c}", E._kernel3(clamp).py_func, (arr(c),) * 3 + (i64,) * 3 + (arr(c),))
    for src in (f, "c8", "c16"):
        check(f"complex convert {src}->{c}", E._kernel1(E._to_float).py_func, (arr(src), arr(c)))
tup = types.UniTuple(i64, 2)
check("copy c16", M._copy, (arr("c16"), i64, tup, arr("c16"), i64, tup, tup))
# f8 (xops/kernels/cuda/f8.py) and i2 / i4 / ui2 / ui4 (subbyte.py): decode, encode, widen,
# wrap, and the u1 select / int8 bit-width maps the sub-byte ops use
from xops.kernels.cuda import f8 as F8, subbyte as SB  # noqa: E402

checkd("f8 round", F8._round.py_func, (i64,) * 8)
checkd("f8 decode", F8._decode.py_func, (i64,) * 5)
check("f8 decode", F8._decode_k, (arr("u1"),) + (i64,) * 4 + (arr("u4"),))
check("f8 encode32", F8._encode32_k, (arr("u4"),) + (i64,) * 4 + (arr("u1"),))
check("f8 encode64", F8._encode64_k, (arr("i8"),) + (i64,) * 4 + (arr("u1"),))
for dt in ("i1", "u1"):
    check(f"subbyte widen {dt}", SB._widen_k, (arr("u1"), i64, i64, arr(dt)))
for dt in ("u1", "i2", "u2", "i4", "u4", "i8"):  # (bytes and 64-bit ints come as u1 / i8)
    check(f"subbyte wrap {dt}", SB._wrap_k, (arr(dt), i64, arr("u1")))
check(
    "map3 u1",
    E._kernel3(E._select1).py_func,
    (arr("?"), arr("u1"), arr("u1")) + (i64,) * 3 + (arr("u1"),),
)
for fn in (E._popcnt, E._clz):
    check("map1p i1", E._kernel1p(fn).py_func, (arr("i1"), i64, arr("i1")))
# rng / rng_uniform / rng_normal / rng_bernoulli (the stream's words), top_k, cholesky,
# triangular_solve (xops/kernels/cuda/rng.py, sorting.py, solve.py)
from xops.kernels.cuda import solve as SV  # noqa: E402

f8t, key3 = types.float64, (u64, u64, u64, i64)
checkd("rng words", RG._philox_words.py_func, (u64, u64, u64, i64))
for dt in FL:
    sig = key3 + (f8t,) * 3 + (b1, f8t, f8t, b1, arr(dt))
    check(f"rng uniform {dt}", RG._uniform_k, sig)
    check(f"rng normal {dt}", RG._normal_k, key3 + (f8t, f8t, arr(dt)))
for dt in FL + ["c8", "c16"]:
    check(f"cholesky {dt}", SV._cholesky_k, (arr(dt), i64, b1, arr(dt)))
    sig = (arr(dt),) * 2 + (i64,) * 4 + (b1,) * 4 + (arr(dt),)
    check(f"triangular_solve {dt}", SV._trsm_k, sig)
for dt in UI:
    check(f"rng uniform int {dt}", RG._uniform_int_k, key3 + (u64,) * 3 + (arr(dt),))
    check(
        f"top_k gather {dt}", SO._top_k_gather, (arr(dt), arr("i8"), i64, i64, arr(dt), arr("i4"))
    )
for dt in ("u1", "u2"):
    check(f"rng clamp {dt}", RG._clamp_bits_k, (arr("f4"), f8t, f8t, sc(dt), sc(dt), arr(dt)))
check("rng bernoulli", RG._bernoulli_k, key3 + (f8t, arr("u4")))
# shift_right_logical, unsigned shift_right_arithmetic, cbrt (xops/kernels/cuda/_cbrt.py),
# reduce_precision and bitcast_convert (conversion.py); f4 / f6 / f8E8M0FNU run through
# the f8 decode / encode kernels above (the same functions, other format parameters)
from xops.kernels.cuda import conversion as CVT  # noqa: E402

for fname, dts in {"_shr": SI, "_shr_u": UI, "_sar_u": UI}.items():
    for dt in dts:
        checkd(fname, getattr(E, fname), (sc(dt), sc(dt), types.int64))
check("map2p shr", E._kernel2p(E._shr_u).py_func, (arr("u8"), arr("u8"), i64, i64, i64, arr("u8")))
for dt in FL:
    check(f"map1 cbrt {dt}", E._kernel1(E._cbrt).py_func, (arr(dt), arr(dt)))
checkd("reduce_precision", CVT._reduce.py_func, (i64,) * 10)
check("reduce_precision 32", CVT._reduce32_k, (arr("u4"),) + (i64,) * 6 + (arr("u4"),))
check("reduce_precision 64", CVT._reduce64_k, (arr("i8"),) + (i64,) * 6 + (arr("i8"),))
for a_t in ("u1", "u2", "u4", "i8"):
    for o_t in ("u1", "u2", "u4", "i8"):
        check(f"bitcast {a_t}->{o_t}", CVT._bitcast_k, (arr(a_t), i64, i64, arr(o_t)))
# the fused Adam / AdamW and SGD updates (xops/kernels/cuda/optim.py): libdevice's _rn products
from xops.kernels.cuda import optim as OPT  # noqa: E402

for dt in FL:
    scalar = from_dtype(np.dtype(dt))
    sig = (arr(dt),) * 4 + (i64, i64) + (scalar,) * 8 + (arr(dt),) * 3
    check(f"adam {dt}", OPT._adam_kernel(np.dtype(dt).type), sig)
    for n in (1, OPT.MANY):  # the multi-tensor update: tuples of arrays indexed at run time
        many = (types.UniTuple(arr(dt), n),) * 4 + (types.UniTuple(i64, n), i64, i64)
        sig = many + (scalar,) * 8 + (arr(dt),)
        try:
            ptx, _ = cuda.compile_ptx(OPT._adam_many_kernel(np.dtype(dt).type, n), sig, cc=(8, 0))
            if "fma." in ptx:
                fails.append(f"adam_many {n} {dt}: a product contracted into an fma")
        except Exception as e:
            fails.append(f"adam_many {n} {dt}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    sig = (arr(dt),) * 3 + (i64,) * 4 + (scalar,) * 4 + (arr(dt),) * 2
    check(f"sgd {dt}", OPT._sgd_kernel(np.dtype(dt).type), sig)
# float -> integer convert (xops/kernels/cuda/elementwise.py): NaN, saturation, truncation
f8s = types.float64
for src in FL:
    for dst in SI + UI:
        sig = (arr(src), f8s, f8s, sc(dst), sc(dst), arr(dst))
        check(f"float->int {src}->{dst}", E._f2i_k, sig)
for dt in UI:  # compare's TOTALORDER key of float bit patterns
    check(f"total key {dt}", E._total_key_k, (arr(dt), i64, i64, arr("i8")))
# relu forward / backward and BatchNorm's running statistics (xops/kernels/cuda/nn_fused.py):
# the running update rounds every product (libdevice _rn), so its PTX has no fma
from xops.kernels.cuda import nn_fused as NNF  # noqa: E402

for dt in FL:
    check(f"relu {dt}", NNF._relu_k, (arr(dt), arr(dt)))
    check(f"relu grad {dt}", NNF._relu_grad_k, (arr(dt),) * 3)
    check(f"nan mask {dt}", NNF._nan_mask_k, (arr(dt),) * 3)
    sig = (arr(dt),) * 4 + (i64,) + (sc(dt),) * 3 + (arr(dt),) * 2 + (arr("i8"),) * 2
    try:
        ptx, _ = cuda.compile_ptx(NNF._running_kernel(np.dtype(dt).type), sig, cc=(8, 0))
        if "fma." in ptx:
            fails.append(f"bn running {dt}: a product contracted into an fma")
    except Exception as e:
        fails.append(f"bn running {dt}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
# the f32 unary maps with 16-byte loads (xops/kernels/cuda/_wide.py): every f32 function
from xops.kernels.cuda import _wide as W  # noqa: E402

for fname, dts in un.items():
    if "f4" in dts and fname != "_to_bool":
        sig = (arr("c16"), arr("f4"), arr("c16"), arr("f4"), i64)
        check(f"map1w {fname}", W._kernel(getattr(E, fname)).py_func, sig)
# the fused cross-entropy and its gradient (xops/kernels/cuda/losses.py): f32 / f64 logits,
# signed and unsigned labels of each width
from xops.kernels.cuda import losses as XENT  # noqa: E402

for dt in FL:
    for lt in SI + UI:
        sig = (arr(dt), arr(lt), arr(dt)) + (i64,) * 4 + (arr(dt), arr("f8"))
        check(f"xent {dt} labels {lt}", XENT._xent.py_func, sig)
check("xent total", XENT._total.py_func, (arr("f8"), i64, i64, i64, arr("f4")))
check("xent total", XENT._total.py_func, (arr("f8"), i64, i64, i64, arr("f8")))
print(len(fails), "failures")
for f in fails:
    print(f)
sys.exit(1 if fails else 0)
