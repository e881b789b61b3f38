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
    check(
        "select",
        E._select3,
        (arr("?"), arr(dt), arr(dt), types.int64, types.int64, types.int64, arr(dt)),
    )
for dt in SI + UI:
    check("clamp", E._clamp3, (arr(dt),) * 3 + (types.int64,) * 3 + (arr(dt),))
for dt in FL:
    check("fclamp", E._fclamp3, (arr(dt),) * 3 + (types.int64,) * 3 + (arr(dt),))
for dt in ["u1", "u2", "u4", "u8", "?", "f4", "f8", "i8"]:
    check("gather", M._gather, (arr(dt), arr("i8"), arr(dt), types.int64, arr(dt)))
    check("gather2", M._gather2, (arr(dt), arr(dt), arr("i8"), arr(dt)))
for dt in SI + UI + FL:
    k = L._gemm(dt)
    i64 = types.int64
    check("gemm", k.py_func, (arr(dt), arr("i8"), arr(dt), arr("i8"), i64, i64, i64, arr(dt)))
print(len(fails), "failures")
for f in fails:
    print(f)
sys.exit(1 if fails else 0)
