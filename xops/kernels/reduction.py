"""Reduction kernels for the recognised bodies of stablehlo.reduce (add, multiply,
maximum, minimum, and, or), and the scalar helpers the window kernels share.

**Element types.** Kernels take arrays in one of four compute dtypes, to keep the
number of compiled specialisations small: float32 (f32 and every narrow float),
float64, int64 (signed integers, ui8..ui32 and i1 as 0/1; sums and products wrap at 64
bits and the caller wraps to the type's width, which gives the same result as wrapping
at every step; the caller maps i1 add/maximum to or, multiply/minimum to and) and
uint64 (ui64).

**One variant per op.** Each loop below is written once against ``combine(a, b, OP)``
and compiled as one variant per op (``FOLD[ADD]``, ...) in which ``OP`` is a
global constant, so the op's branches fold away at compile time and the loops
vectorise. Variants compile lazily, per element type actually used.

**Race-free pattern.** Every loop is *output-parallel*: each ``prange`` iteration
computes and writes only its own outputs, in an order fixed by the shapes alone, so
results do not depend on the thread count.

**Schedules** are ones the spec allows (``reduce``: a binary tree whose in-order
traversal is the inputs in ascending order, with init values inserted anywhere): the
init value once, leftmost, then the elements. ``fold`` over columns folds left to right,
as the naive reference does; over rows, for floating-point add/multiply it cuts each row into
8 contiguous blocks folded in separate accumulators (8 independent dependency chains)
and combines them as a balanced tree in order; for the ops whose result does not depend
on the order at all (integer ops, and/or, IEEE maximum/minimum, which are associative
and commutative on values) it folds 64 interleaved lanes, which vectorises.

Note for editors: ``xops/kernels/windows.py`` compiles ``combine`` and
``select_keeps`` into its kernels. Numba's cache does not notice edits made here from
there: clear ``xops/kernels/__pycache__`` after changing them.
"""

import types as _pytypes

import numpy as np
from numba import prange, types
from numba.extending import overload

from .config import kernel, scalar

ADD, MUL, MAX, MIN, AND, OR = range(6)
OP_CODES = {"add": ADD, "multiply": MUL, "maximum": MAX, "minimum": MIN, "and": AND, "or": OR}
GE, GT, LE, LT = range(4)
SELECT_CODES = {"GE": GE, "GT": GT, "LE": LE, "LT": LT}

OP = ADD  # replaced by each per-op variant's own constant (see per_op)
SEL = GE  # likewise for select codes

_SHORT = 64  # rows shorter than this fold in one accumulator
_LANES = 64  # lanes of the order-free row fold


def combine(a, b, op):
    """``op(a, b)`` with the spec's semantics: add and multiply (integers wrap), IEEE
    754-2019 maximum/minimum for floats (NaN if either is NaN, -0 < +0), bitwise
    and/or. Callable from Numba kernels only (implemented by the overload below)."""
    raise NotImplementedError("combine is only callable from Numba kernels")


@scalar
def _float_pick(a, b, op):
    """IEEE 754-2019 maximum (op MAX) or minimum (else) of floats: NaN if either is NaN,
    -0 < +0."""
    if op == MAX:
        if a > b:
            return a
        if b > a:
            return b
        if a == b:  # equal, or +-0: +0 wins
            return b if np.signbit(a) else a
        return a + b  # a NaN is involved: a quiet NaN
    if a < b:  # MIN
        return a
    if b < a:
        return b
    if a == b:
        return a if np.signbit(a) else b
    return a + b


@scalar
def _int_pick(a, b, op):
    """maximum, minimum, bitwise and / or of integers (booleans too)."""
    if op == MAX:
        return a if a > b else b
    if op == MIN:
        return a if a < b else b
    if op == AND:
        return a & b
    return a | b


@overload(combine)
def _combine_typed(a, b, op):
    # the ops other than add and multiply by type: AND/OR do not compile for floats
    if isinstance(a, types.Float):
        pick = _float_pick
    elif isinstance(a, (types.Integer, types.Boolean)):
        pick = _int_pick
    else:
        return None

    def typed_combine(a, b, op):
        if op == ADD:
            return a + b
        if op == MUL:
            return a * b
        return pick(a, b, op)

    return typed_combine


@scalar
def select_keeps(pick, candidate, code):
    """select(pick, candidate) for a recognised select body ``compare(a, b, DIR)``:
    True keeps the current pick. A comparison with NaN is false, so a NaN candidate
    replaces the pick and a NaN pick is replaced, exactly as the body would."""
    if code == GE:
        return pick >= candidate
    if code == GT:
        return pick > candidate
    if code == LE:
        return pick <= candidate
    return pick < candidate


def per_op(py_func, name="OP", codes=OP_CODES):
    """{code: Kernel}: one variant of a prange loop per op code, with the global
    ``name`` bound to the code as a compile-time constant. Each variant has its own
    qualified name (``fold_add``), hence its own cache file.

    Call at the end of a module: the variant's globals are a snapshot of the module's."""
    out = {}
    for label, code in codes.items():
        variant = f"{py_func.__name__}_{label.lower()}"
        # the name goes into the code object too: Numba names cache files after the
        # qualified name, and config.kernel derives its parallel twin's from the code
        renamed = py_func.__code__.replace(co_name=variant)
        if hasattr(renamed, "co_qualname"):  # Python >= 3.11
            renamed = renamed.replace(co_qualname=variant)
        fn = _pytypes.FunctionType(
            renamed,
            {**py_func.__globals__, name: code},
            variant,
            py_func.__defaults__,
            py_func.__closure__,
        )
        fn.__qualname__ = variant
        fn.__doc__ = py_func.__doc__
        out[code] = kernel(fn)
    return out


@scalar
def _fold_blocks(row, op):
    """Fold the 1-D array ``row`` (not empty) with ``op`` as 8 contiguous blocks (the
    last takes the remainder), each folded left to right in its own accumulator,
    combined as ((b0 b1)(b2 b3))((b4 b5)(b6 b7)): a tree whose in-order traversal is
    still row[0], ..., row[n-1], so it is a schedule the spec allows for any body."""
    n = row.shape[0]  # (bounds from the shape itself: LLVM then drops index checks)
    if n < _SHORT:
        acc = row[0]
        for k in range(1, n):
            acc = combine(acc, row[k], op)
        return acc
    b = n // 8
    s1 = b
    s2 = s1 + b
    s3 = s2 + b
    s4 = s3 + b
    s5 = s4 + b
    s6 = s5 + b
    s7 = s6 + b
    a0 = row[0]
    a1 = row[s1]
    a2 = row[s2]
    a3 = row[s3]
    a4 = row[s4]
    a5 = row[s5]
    a6 = row[s6]
    a7 = row[s7]
    for j in range(1, b):
        a0 = combine(a0, row[j], op)
        a1 = combine(a1, row[s1 + j], op)
        a2 = combine(a2, row[s2 + j], op)
        a3 = combine(a3, row[s3 + j], op)
        a4 = combine(a4, row[s4 + j], op)
        a5 = combine(a5, row[s5 + j], op)
        a6 = combine(a6, row[s6 + j], op)
        a7 = combine(a7, row[s7 + j], op)
    for k in range(s7 + b, n):
        a7 = combine(a7, row[k], op)
    left = combine(combine(a0, a1, op), combine(a2, a3, op), op)
    right = combine(combine(a4, a5, op), combine(a6, a7, op), op)
    return combine(left, right, op)


@scalar
def _fold_lanes(row, acc, op):
    """Fold the 1-D array ``row`` (not empty) with ``op`` in _LANES interleaved lanes,
    then the lanes in order, then the tail. Only for ops whose result does not depend
    on the order of the operands."""
    n = row.shape[0]
    if n < 2 * _LANES:
        v = row[0]
        for k in range(1, n):
            v = combine(v, row[k], op)
        return v
    nb = n // _LANES
    for j in range(_LANES):
        acc[j] = row[j]
    for i in range(1, nb):
        blk = row[i * _LANES : (i + 1) * _LANES]
        for j in range(_LANES):
            acc[j] = combine(acc[j], blk[j], op)
    v = acc[0]
    for j in range(1, _LANES):
        v = combine(v, acc[j], op)
    for k in range(nb * _LANES, n):
        v = combine(v, row[k], op)
    return v


def fold(x, out, init, with_init, blocked, chunk):
    """OP-fold of the 3-D array x (O, R, I) over R. Output-parallel either way:

    * I == 1 (rows): iteration t owns out[o, c], the fold of chunk c (``chunk``
      contiguous elements; the last may be shorter) of row o, combined as
      combine(init, fold) when ``with_init``. ``blocked`` picks the 8-block schedule
      (any body) over the 64-lane one (order-free ops only).
    * I > 1 (columns): iteration t owns out[o, lo:hi], ``chunk`` columns of output row
      o, folding x[o, :, lo:hi] into it left to right from the init value (the
      reference's order); the inner loop runs over contiguous columns.

    Chunks depend on the shapes only, never on the thread count."""
    n_o = x.shape[0]
    r = x.shape[1]
    n_i = x.shape[2]
    if n_i == 1:
        x2 = x.reshape((n_o, r))  # C-contiguous rows (a [o, lo:hi, 0] view is not)
        nc = out.shape[1]
        for t in prange(n_o * nc):
            o = t // nc
            c = t - o * nc
            lo = c * chunk
            row = x2[o, lo : min(r, lo + chunk)]
            if blocked:
                v = _fold_blocks(row, OP)
            else:
                v = _fold_lanes(row, np.empty(_LANES, x.dtype), OP)
            if with_init:
                v = combine(init, v, OP)
            out[o, c] = v
        return
    nb = (n_i + chunk - 1) // chunk
    for t in prange(n_o * nb):
        o = t // nb
        b = t - o * nb
        lo = b * chunk
        acc = out[o, lo : min(n_i, lo + chunk)]  # 1-D views: the inner loop vectorises
        for i in range(acc.shape[0]):
            acc[i] = init
        for k in range(r):
            xk = x[o, k, lo : min(n_i, lo + chunk)]
            for i in range(acc.shape[0]):
                acc[i] = combine(acc[i], xk[i], OP)


FOLD = per_op(fold)
