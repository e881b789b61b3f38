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
init value once, leftmost, then the elements. Over columns (the reduced dim is not the
last one) each output folds its elements left to right, as the naive reference does,
with the loop vectorised across outputs. Over rows (the last dim): for floating-point
add/multiply, whose result depends on the order, each row is cut into 8 contiguous
blocks folded in separate accumulators and combined as a balanced tree in order
(:func:`_fold_blocks`); for the ops whose result does not depend on the order at all
(integer ops, and/or, IEEE maximum/minimum) rows of at least _SHORT elements fold in
_LANES = 32 interleaved lanes, 4 lane blocks per step (:func:`_fold_row`), which LLVM
vectorises. Either order is written out element by element, so it is the same for every
SIMD width (AVX2 or AVX-512) and every thread count. (The lane order for float sums
measured about 2x faster on rows, but it is not a tree the spec allows, so xops does not
use it.)

**Maximum/minimum in vector loops.** :func:`lane_combine` takes NumPy's maximum/minimum
(NaN-propagating, vectorisable) and may pick either zero of a -0/+0 tie;
:func:`fix_zero` rescans the (rare) zero results for the zero IEEE 754-2019 picks.

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

_LANES = 32  # accumulators of the row fold
_STEP = 4 * _LANES  # elements each step of the row fold takes
_SHORT = 2 * _STEP  # rows shorter than this fold left to right in one accumulator
_SHORT_BLOCKS = 64  # likewise for the 8-block schedule (float add/multiply)


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


def _typed(a, float_pick):
    """combine's implementation for a's type: add and multiply, then ``float_pick`` for
    floats (AND/OR do not compile for floats) or the integer ops."""
    if isinstance(a, types.Float):
        pick = float_pick
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


@overload(combine)
def _combine_typed(a, b, op):
    return _typed(a, _float_pick)


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


def lane_combine(a, b, op):
    """``combine`` for the vectorised loops: the same for add, multiply and the integer
    ops; for floats, maximum/minimum as one compare-and-select (a NaN propagates) whose
    result may have the wrong sign when it is a zero -- the loops fix that once at the
    end (:func:`fix_zero`). Callable from Numba kernels only."""
    raise NotImplementedError("lane_combine is only callable from Numba kernels")


@scalar
def _float_select(a, b, op):
    # NumPy's maximum/minimum propagate NaN and compile to code LLVM vectorises (a
    # conditional expression does not); the sign of a zero is left to fix_zero
    if op == MAX:
        return np.maximum(a, b)
    return np.minimum(a, b)


@overload(lane_combine)
def _lane_combine_typed(a, b, op):
    return _typed(a, _float_select)


def fix_zero(v, xs, op):
    """The fold ``v`` of the 1-D array ``xs`` made exact where it is a zero of
    maximum/minimum over floats: +0 if maximum and xs holds a +0, -0 if minimum and xs
    holds a -0, else the other zero. ``v`` itself for every other op and type."""
    raise NotImplementedError("fix_zero is only callable from Numba kernels")


@overload(fix_zero)
def _fix_zero_typed(v, xs, op):
    if not isinstance(v, types.Float):
        return lambda v, xs, op: v

    def float_fix(v, xs, op):
        if (op != MAX and op != MIN) or v != 0:
            return v
        want = op == MIN  # the sign bit of the zero that wins
        for k in range(xs.shape[0]):
            if xs[k] == 0 and np.signbit(xs[k]) == want:
                return xs[k]
        return -v if np.signbit(v) == want else v

    return float_fix


@scalar
def _fold_blocks(row, op):
    """Fold the 1-D array ``row`` (not empty) with ``op`` as 8 contiguous blocks (the
    last takes the remainder), each folded left to right in its own accumulator,
    combined as ((b0 b1)(b2 b3))((b4 b5)(b6 b7)): a tree whose in-order traversal is
    still row[0], ..., row[n-1], so it is a schedule the spec allows for any body."""
    n = row.shape[0]  # (bounds from the shape itself: LLVM then drops index checks)
    if n < _SHORT_BLOCKS:
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
def _fold_row(row, acc, op):
    """Fold the 1-D array ``row`` (not empty) with ``op``. Rows shorter than _SHORT fold
    left to right. Longer ones fold in _LANES lanes: with L = _LANES, lane j takes the
    step tree (row[b+j] row[b+L+j]) (row[b+2L+j] row[b+3L+j]) of each step of _STEP
    elements (from b): the first step's as its start value, the others combined into it
    in step order. The lanes then combine as a balanced tree in lane order, and the tail
    after the last whole step folds in left to right. The order is written out element
    by element, so the result is the same whatever SIMD width the loop compiles to.
    ``acc``: scratch of _LANES elements."""
    n = row.shape[0]  # (bounds from the shape itself: LLVM then drops index checks)
    steps = n // _STEP if n >= _SHORT else 0
    v = row[0]
    tail = 1
    if steps:
        for k in range(steps):
            b = k * _STEP
            x0 = row[b : b + _LANES]
            x1 = row[b + _LANES : b + 2 * _LANES]
            x2 = row[b + 2 * _LANES : b + 3 * _LANES]
            x3 = row[b + 3 * _LANES : b + 4 * _LANES]
            for j in range(_LANES):
                step = lane_combine(
                    lane_combine(x0[j], x1[j], op), lane_combine(x2[j], x3[j], op), op
                )
                acc[j] = step if k == 0 else lane_combine(acc[j], step, op)
        width = _LANES
        while width > 1:
            width //= 2
            for j in range(width):
                acc[j] = lane_combine(acc[2 * j], acc[2 * j + 1], op)
        v = acc[0]
        tail = steps * _STEP
    for k in range(tail, n):
        v = lane_combine(v, row[k], op)
    return fix_zero(v, row, op)


def fold(x, out, init, with_init, blocked, chunk):
    """OP-fold of the 3-D array x (O, R, I) over R. Output-parallel either way:

    * I == 1 (rows): iteration t owns out[o, c], the fold of chunk c (``chunk``
      contiguous elements; the last may be shorter) of row o, combined as
      combine(init, fold) when ``with_init``. ``blocked`` picks the 8-block schedule
      (:func:`_fold_blocks`: float add/multiply, whose result depends on the order) over
      the lane one (:func:`_fold_row`: the ops whose result does not).
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
        scratch = np.empty((n_o * nc, _LANES), x.dtype)
        for t in prange(n_o * nc):
            o = t // nc
            c = t - o * nc
            lo = c * chunk
            row = x2[o, lo : min(r, lo + chunk)]
            v = _fold_blocks(row, OP) if blocked else _fold_row(row, scratch[t], OP)
            if with_init:
                v = combine(init, v, OP)
            out[o, c] = v
        return
    nb = (n_i + chunk - 1) // chunk
    for t in prange(n_o * nb):
        o = t // nb
        b = t - o * nb
        lo = b * chunk
        hi = min(n_i, lo + chunk)
        acc = out[o, lo:hi]  # 1-D views: the inner loop vectorises
        for i in range(acc.shape[0]):
            acc[i] = init
        for k in range(r):
            xk = x[o, k, lo:hi]
            for i in range(acc.shape[0]):
                acc[i] = lane_combine(acc[i], xk[i], OP)
        if OP == MAX or OP == MIN:
            for i in range(acc.shape[0]):
                if acc[i] == 0:  # rare: rescan the column for the zero that wins
                    # (the column's zero if its fold is one, then the init value's turn)
                    acc[i] = combine(init, fix_zero(acc[i], x[o, :, lo + i], OP), OP)


FOLD = per_op(fold)
