"""Reduction kernels for the recognised bodies of stablehlo.reduce (add, multiply,
maximum, minimum, and, or), and the scalar helpers the window kernels share.

**Element types.** Kernels take arrays in one of four compute dtypes, to keep the
number of compiled specialisations small: float32 (f32 and every narrow float),
float64, int64 (signed integers, ui8..ui32 and i1 as 0/1; sums and products wrap at 64
bits and the caller wraps to the type's width, which gives the same result as wrapping
at every step; the caller maps i1 add/maximum to or, multiply/minimum to and) and
uint64 (ui64).

**One variant per op.** Each loop below is written once against ``combine(a, b, OP)``
and compiled as one variant per op (``FOLD_LEFT[ADD]``, ...) in which ``OP`` is a
global constant, so the op's branches fold away at compile time and the loops
vectorise; ``combine`` given that constant compiles the op's expression alone
(:func:`_by_code`). Variants compile lazily, per element type actually used, and the
left folds (columns, short rows: the common small reductions) apart from the row folds
(:func:`fold` picks), so a call compiles only the loops it runs: a cold f32 column sum
compiled in ~4 s CPU as one kernel with the row folds, ~0.7 s as fold_left alone.

**Race-free pattern.** Every loop is *output-parallel*: each ``prange`` iteration
computes and writes only its own outputs, in an order fixed by the shapes alone, so
results do not depend on the thread count.

**Schedules** are ones the spec allows (``reduce``: a binary tree whose in-order
traversal is the inputs in ascending order, with init values inserted anywhere): the
init value once, leftmost, then the elements. Over columns (the reduced dim is not the
last one) each output folds its elements left to right, as the naive reference does,
with the loop vectorised across outputs. Over rows (the last dim): for floating-point
add/multiply, whose result depends on the order, each row folds as an in-order tree
(:func:`_fold_tree`): passes of balanced trees of 8 neighbours, 64 elements at a time
in LLVM vector instructions (:func:`_tree_groups`: shuffles pair neighbouring lanes, so
no reassociation), the tails left to right (integer add/multiply too: they wrap, exact
in any order); for the other ops, whose result does not depend on the order at all
(IEEE maximum/minimum, integer maximum/minimum, and/or) rows of at least _SHORT elements
fold in _LANES = 32 interleaved lanes, 4 lane blocks per step (:func:`_fold_row`), which
LLVM vectorises. Either order is written out element by element, so it is the same for
every SIMD width (AVX2 or AVX-512) and every thread count. Each parallel iteration takes
a group of consecutive rows, one row after the other: one stream from memory per
thread (see :func:`fold_rows`).
(A lane order for float sums is not a tree the spec allows, so xops does not use
it there.)

**Compiled bodies.** :func:`program_fold` runs the generic reduce's pairwise tree (see
xops.ops.reduction) with a body traced into a program of elementwise float ops
(:data:`PROGRAM_OPS`), compiled into one generated loop per program
(xops.kernels.programs).

**Maximum/minimum in vector loops.** :func:`lane_combine` takes NumPy's maximum/minimum
(NaN-propagating, vectorisable) and may pick either zero of a -0/+0 tie;
:func:`fix_zero` rescans the (rare) zero results for the zero IEEE 754-2019 picks. The
row lane fold goes further (:func:`lane_pick`): a plain compare-select per vector, NaNs
noted apart (:func:`_lane_steps`), since a row's result does not depend on the order.

Note for editors: ``xops/kernels/windows.py`` compiles ``combine`` and
``select_keeps`` into its kernels. Numba's cache does not notice edits made here from
there: clear ``xops/kernels/__pycache__`` after changing them.
"""

import types as _pytypes

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic, overload

from . import programs as _programs
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
_SHORT_BLOCKS = 64  # likewise for the tree fold (float add/multiply)
_GROUP = 16  # rows each parallel iteration of the row fold takes


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


def _by_code(a, op, float_pick):
    """combine's implementation for an op code known when compiling (an integer
    literal: a kernel's per-op constant ``OP``): that op's expression alone, a helper of
    ~0.04 s compile that LLVM inlines, where :func:`_typed`'s takes every op's branches
    through typing and lowering (0.34 s and 0.12 s for the main job's fold). A runtime
    code gets None here, then :func:`_typed`'s implementation. The same operations as
    :func:`_typed`'s, so the same results. (``inline="always"`` on these overloads makes
    Numba warn, NumbaIRAssumptionWarning, inside the fold loops.)"""
    if not isinstance(op, types.IntegerLiteral):
        return None
    if not isinstance(a, (types.Float, types.Integer, types.Boolean)):
        return None
    code = op.literal_value
    if code == ADD:
        return lambda a, b, op: a + b
    if code == MUL:
        return lambda a, b, op: a * b
    if isinstance(a, types.Float):
        return lambda a, b, op: float_pick(a, b, op)
    return lambda a, b, op: _int_pick(a, b, op)


# (the literal overloads are registered first: Numba tries overloads in that order)
@overload(combine, prefer_literal=True)
def _combine_by_code(a, b, op):
    return _by_code(a, op, _float_pick)


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


@overload(lane_combine, prefer_literal=True)
def _lane_combine_by_code(a, b, op):
    return _by_code(a, op, _float_select)


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


_TREE = 8  # the in-order tree fold combines groups of 8 neighbours per pass


def _tree_groups(fmul, lanes=8):
    """An intrinsic ``f(src, i, dst, j)``: dst[j + g] = the balanced tree
    ((s0 s1)(s2 s3))((s4 s5)(s6 s7)) of the 8 neighbours s = src[i + 8g : i + 8g + 8],
    for g = 0..lanes-1 (8 * lanes elements in, ``lanes`` out; fadd, or fmul when
    ``fmul``). Written as LLVM vector instructions: each level pairs even and odd lanes
    of two ``lanes``-lane vectors with shufflevector, then one vector fadd/fmul, IEEE in
    every lane (no fast-math flags), so every output is that scalar tree exactly,
    whatever SIMD width the CPU has. 8 lanes fit AVX2's shuffles (vhaddps); 16 floats
    pair lanes inside 128-bit blocks first (vshufps) and cross blocks once at the end
    (two vpermt2ps where pairing even and odd lanes took 14; one thread, 16 rows of
    4096 f32 in L2, AVX-512 EPYC, 2026-11-27: the tree fold 4.0 -> 3.4 us, the kernel
    4.18 -> 4.02 us; from memory, where the row folds run at the order-free streaming
    loop's speed, no change measured); 16 doubles pair even and odd lanes at every
    level (vpermt2pd). On AVX2 LLVM splits the 16 lanes into 8-lane halves. The caller
    keeps i + 8 * lanes <= len(src) and j + lanes <= len(dst) (1-D C-contiguous
    arrays)."""

    @intrinsic
    def groups(typingctx, src, i, dst, j):
        ok = (
            isinstance(src, types.Array)
            and isinstance(dst, types.Array)
            and src.ndim == dst.ndim == 1
            and src.layout == dst.layout == "C"
            and src.dtype == dst.dtype
            and isinstance(src.dtype, (types.Float, types.Integer))
        )
        if not ok:
            return None

        def codegen(context, builder, sig, args):
            srcty, _, dstty, _ = sig.args
            s = context.make_array(srcty)(context, builder, args[0])
            d = context.make_array(dstty)(context, builder, args[2])
            elt = context.get_data_type(srcty.dtype)
            size = srcty.dtype.bitwidth // 8
            vec = ir.VectorType(elt, lanes)
            sp = builder.bitcast(builder.gep(s.data, [args[1]]), vec.as_pointer())
            vs = [
                builder.load(builder.gep(sp, [ir.Constant(ir.IntType(64), k)]), align=size)
                for k in range(8)
            ]

            def mask(*picks):
                return ir.Constant(ir.VectorType(ir.IntType(32), lanes), list(picks))

            if lanes == 8:
                # levels 1 and 2 pair lanes inside each 128-bit half (one vshufps each on
                # x86); level 3 pairs the halves: the lanes come out in group order
                masks = [
                    (mask(0, 2, 8, 10, 4, 6, 12, 14), mask(1, 3, 9, 11, 5, 7, 13, 15)),
                    (mask(0, 2, 8, 10, 4, 6, 12, 14), mask(1, 3, 9, 11, 5, 7, 13, 15)),
                    (mask(0, 1, 2, 3, 8, 9, 10, 11), mask(4, 5, 6, 7, 12, 13, 14, 15)),
                ]
            elif size == 4:
                # 16 floats: levels 1 and 2 pair lanes inside each 128-bit block (vshufps:
                # block b of a level's result holds the pairs of block b of its left
                # operand, then those of its right one), level 3 pairs whole blocks (two
                # vpermt2ps once LLVM folds the last shuffle in), which leaves the groups
                # in the order 0 2 4 6 | 1 3 5 7 | 8 10 12 14 | 9 11 13 15: one permute
                # puts them in order. Each lane is the same tree as before, the pairs
                # ordered (left, right): 2 cross-block permutes per 16 groups, not 14
                pairs = [(w, 4 * b) for b in range(4) for w in (0, lanes)]
                even = mask(*[w + b + k for w, b in pairs for k in (0, 2)])
                odd = mask(*[w + b + k for w, b in pairs for k in (1, 3)])
                blocks = [w + b for w in (0, lanes) for b in (0, 8)]
                first = mask(*[b + k for b in blocks for k in range(4)])
                second = mask(*[b + 4 + k for b in blocks for k in range(4)])
                masks = [(even, odd), (even, odd), (first, second)]
            else:  # every level: the even and the odd elements of the pair, in order
                even = mask(*range(0, 2 * lanes, 2))
                odd = mask(*range(1, 2 * lanes, 2))
                masks = [(even, odd)] * 3
            if isinstance(srcty.dtype, types.Float):
                op = builder.fmul if fmul else builder.fadd
            else:  # (integers: wrapping, exact in any order; compiled, never used)
                op = builder.mul if fmul else builder.add
            for left, right in masks:
                vs = [
                    op(
                        builder.shuffle_vector(vs[k], vs[k + 1], left),
                        builder.shuffle_vector(vs[k], vs[k + 1], right),
                    )
                    for k in range(0, len(vs), 2)
                ]
            if lanes == 16 and size == 4:
                order = mask(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)
                vs = [builder.shuffle_vector(vs[0], ir.Constant(vec, ir.Undefined), order)]
            dp = builder.bitcast(builder.gep(d.data, [args[3]]), vec.as_pointer())
            builder.store(vs[0], dp, align=size)
            return context.get_dummy_value()

        return types.void(src, types.intp, dst, types.intp), codegen

    return groups


_add_groups = _tree_groups(False)
_mul_groups = _tree_groups(True)
_add_groups16 = _tree_groups(False, 16)
_mul_groups16 = _tree_groups(True, 16)


@scalar
def _groups(src, q, dst, op):
    """The trees of src[:64q] in groups of 8 into dst[:8q] (:func:`_tree_groups`): 128
    elements a call, the last 64 apart when q is odd. (16 groups a call against 8, one
    thread, 4096 x 4096 f32 sums, AVX-512 EPYC, 2026-11-26: 2.29 vs 2.54 ms; compiled
    for AVX2 alone (NUMBA_CPU_FEATURES) on that machine 2.10 vs 2.16 ms, the same
    bits.)"""
    for c in range(q // 2):
        if op == MUL:
            _mul_groups16(src, 128 * c, dst, 16 * c)
        else:
            _add_groups16(src, 128 * c, dst, 16 * c)
    if q % 2:
        if op == MUL:
            _mul_groups(src, 64 * (q - 1), dst, 8 * (q - 1))
        else:
            _add_groups(src, 64 * (q - 1), dst, 8 * (q - 1))


@scalar
def _fold_left(xs, lo, hi, op):
    """xs[lo], ..., xs[hi - 1] (hi > lo) folded left to right."""
    v = xs[lo]
    for k in range(lo + 1, hi):
        v = combine(v, xs[k], op)
    return v


@scalar
def _groups_pass(src, m, dst, op):
    """One pass of :func:`_fold_tree`: the trees of src[:64q] (q = m // 64, at least
    1) in groups of 8 into dst[:8q]; returns the left fold of the rest, src[64q:m]
    (src[0] when there is none: the caller then ignores it)."""
    q = m // 64
    _groups(src, q, dst, op)
    return _fold_left(src, 64 * q, m, op) if m > 64 * q else src[0]


@scalar
def _tree_finish(scratch, n, tail, op):
    """:func:`_fold_tree` of a row of n >= _SHORT_BLOCKS elements after its first pass,
    which left its n // 8 values in ``scratch[:n // 8]`` and its tail's fold in ``tail``
    (ignored when n % 64 == 0)."""
    h = n // 8
    a = scratch[:h]
    b = scratch[h : h + h // 8 + 8]
    tails = scratch[h + h // 8 + 8 :]
    nt = 0
    if n % 64:
        tails[nt] = tail
        nt += 1
    m = 8 * (n // 64)
    flip = False
    while m >= 64:
        src = b if flip else a
        dst = a if flip else b
        t = _groups_pass(src, m, dst, op)
        if m % 64:
            tails[nt] = t
            nt += 1
        m = 8 * (m // 64)
        flip = not flip
    v = _fold_left(b if flip else a, 0, m, op)
    for k in range(nt - 1, -1, -1):
        v = combine(v, tails[k], op)
    return v


@scalar
def _fold_tree(row, scratch, op):
    """Fold the 1-D C-contiguous ``row`` (n >= _SHORT_BLOCKS elements) with float add or
    multiply (``op``) as a tree whose in-order traversal is row[0], ..., row[n-1] (so a
    schedule the spec allows for any body): each pass turns the values left of its tail
    (the last m % 64) into the balanced trees of 8 neighbours (:func:`_tree_groups`,
    SIMD), the tail folded left to right; passes repeat while 64 or more values are
    left, these fold left to right, then combine with the tails, the latest pass's first
    (each tail is the right neighbour of what the later passes covered). ``scratch``: at
    least n // 8 + n // 64 + 16 elements."""
    n = row.shape[0]
    q = n // 64
    _groups(row, q, scratch, op)
    tail = _fold_left(row, 64 * q, n, op) if n > 64 * q else row[0]
    return _tree_finish(scratch, n, tail, op)


def lane_pick(a, b, op):
    """``combine`` for :func:`_fold_row`'s lanes: the same for integers; for floats,
    maximum/minimum as ``a if a > b else b`` (``<`` for minimum), one vmaxps/vminps,
    which returns b where either is NaN and either zero of a -0/+0 tie: the lane fold
    notes NaNs apart (:func:`_lane_steps`) and fixes a zero result (:func:`fix_zero`).
    Callable from Numba kernels only."""
    raise NotImplementedError("lane_pick is only callable from Numba kernels")


@scalar
def _plain_pick(a, b, op):
    if op == MAX:
        return a if a > b else b
    return a if a < b else b


@overload(lane_pick, prefer_literal=True)
def _lane_pick_by_code(a, b, op):
    return _by_code(a, op, _plain_pick)


@overload(lane_pick)
def _lane_pick_typed(a, b, op):
    return _typed(a, _plain_pick)


@scalar
def _first_nan(row):
    """The first NaN of the 1-D ``row`` (the caller knows it holds one)."""
    for k in range(row.shape[0]):
        if row[k] != row[k]:
            return row[k]
    return row[0]


def _lane_steps_intrinsic():
    """An intrinsic ``f(row, steps, acc, op)`` for :func:`_fold_row`: the lanes of
    ``steps`` (at least 1) steps of the 1-D C-contiguous ``row`` into ``acc`` (_LANES
    elements), as one loop of LLVM vector instructions whose accumulators stay in
    registers; returns True when a float step met a NaN. Lane j starts as the first
    step's tree (x0 x1)(x2 x3) of x_i = row[i*L + j] (L = _LANES) and takes each later
    step's tree in turn. ``op`` is a literal code: maximum/minimum pick ``a > b ? a : b``
    (``<`` for minimum: one vmaxps/vminps, which keeps b where either is NaN, so NaNs
    are noted apart, one unordered compare per pair, and may give either zero of a
    -0/+0 tie), with signed or unsigned compares for integers; and/or are bitwise.
    (Written as a loop here, not left to LLVM's vectoriser: a Numba loop keeps the
    lanes in memory behind alias checks, 47 against 65 GB/s in L2 on one AVX-512
    core and 2.5 against 1.8-2.0 ms on 4096 x 4096 f32 compiled for AVX2 alone.)"""

    @intrinsic(prefer_literal=True)
    def lane_steps(typingctx, row, steps, acc, op):
        ok = (
            isinstance(op, types.IntegerLiteral)
            and isinstance(row, types.Array)
            and isinstance(acc, types.Array)
            and row.ndim == acc.ndim == 1
            and row.layout == acc.layout == "C"
            and row.dtype == acc.dtype
            and isinstance(row.dtype, (types.Float, types.Integer))
            and isinstance(steps, types.Integer)
        )
        if not ok:
            return None
        code = op.literal_value
        dt = row.dtype
        is_float = isinstance(dt, types.Float)

        def codegen(context, builder, sig, args):
            r = context.make_array(sig.args[0])(context, builder, args[0])
            a = context.make_array(sig.args[2])(context, builder, args[2])
            n_steps = context.cast(builder, args[1], sig.args[1], types.intp)
            i64 = ir.IntType(64)
            vec = ir.VectorType(context.get_data_type(dt), _LANES)
            flags = ir.VectorType(ir.IntType(1), _LANES)
            size = dt.bitwidth // 8
            base = builder.bitcast(r.data, vec.as_pointer())

            def pick(x, y):
                if code == AND:
                    return builder.and_(x, y)
                if code == OR:
                    return builder.or_(x, y)
                sign = ">" if code == MAX else "<"
                if is_float:
                    return builder.select(builder.fcmp_ordered(sign, x, y), x, y)
                if dt.signed:
                    return builder.select(builder.icmp_signed(sign, x, y), x, y)
                return builder.select(builder.icmp_unsigned(sign, x, y), x, y)

            def unordered(x, y):
                if is_float:
                    return builder.fcmp_unordered("uno", x, y)
                return ir.Constant(flags, [0] * _LANES)

            def step(k):
                first = builder.mul(k, ir.Constant(i64, 4))
                xs = [
                    builder.load(
                        builder.gep(base, [builder.add(first, ir.Constant(i64, i))]), align=size
                    )
                    for i in range(4)
                ]
                tree = pick(pick(xs[0], xs[1]), pick(xs[2], xs[3]))
                return tree, builder.or_(unordered(xs[0], xs[1]), unordered(xs[2], xs[3]))

            acc0, nan0 = step(ir.Constant(i64, 0))
            start = builder.block
            loop = builder.append_basic_block("lane_steps")
            done = builder.append_basic_block("lane_steps_done")
            builder.cbranch(builder.icmp_signed(">", n_steps, ir.Constant(i64, 1)), loop, done)
            builder.position_at_end(loop)
            k = builder.phi(i64)
            acc_k = builder.phi(vec)
            nan_k = builder.phi(flags)
            tree, nan = step(k)
            acc_next = pick(acc_k, tree)
            nan_next = builder.or_(nan_k, nan)
            k_next = builder.add(k, ir.Constant(i64, 1))
            end = builder.block
            for phi, first, later in (
                (k, ir.Constant(i64, 1), k_next),
                (acc_k, acc0, acc_next),
                (nan_k, nan0, nan_next),
            ):
                phi.add_incoming(first, start)
                phi.add_incoming(later, end)
            builder.cbranch(builder.icmp_signed("<", k_next, n_steps), loop, done)
            builder.position_at_end(done)
            acc_out = builder.phi(vec)
            acc_out.add_incoming(acc0, start)
            acc_out.add_incoming(acc_next, end)
            nan_out = builder.phi(flags)
            nan_out.add_incoming(nan0, start)
            nan_out.add_incoming(nan_next, end)
            builder.store(acc_out, builder.bitcast(a.data, vec.as_pointer()), align=size)
            bits = builder.bitcast(nan_out, ir.IntType(_LANES))
            return builder.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(_LANES), 0))

        return types.boolean(row, steps, acc, op), codegen

    return lane_steps


_lane_steps = _lane_steps_intrinsic()


@scalar
def _fold_row(row, acc, op):
    """Fold the 1-D C-contiguous ``row`` (n >= _SHORT elements) with ``op`` (maximum,
    minimum, and, or: results that do not depend on the order) in _LANES lanes: with
    L = _LANES, lane j takes the step tree (row[b+j] row[b+L+j]) (row[b+2L+j]
    row[b+3L+j]) of each step of _STEP elements (from b): the first step's as its start
    value, the others combined into it in step order (:func:`_lane_steps`). The lanes
    then combine as a balanced tree in lane order, and the tail after the last whole
    step folds in left to right. The order is written out element by element, so the
    result is the same whatever SIMD width the loop compiles to. Float maximum/minimum
    run as plain compare-selects with NaNs noted apart (one instruction per vector
    where the exact IEEE pick takes six): a row holding a NaN folds to its first NaN,
    and a zero result is made exact (:func:`fix_zero`). ``acc``: _LANES elements."""
    n = row.shape[0]
    steps = n // _STEP
    if _lane_steps(row, steps, acc, op):
        return _first_nan(row)
    width = _LANES
    while width > 1:
        width //= 2
        for j in range(width):
            acc[j] = lane_pick(acc[2 * j], acc[2 * j + 1], op)
    v = acc[0]
    for k in range(steps * _STEP, n):
        v = lane_combine(v, row[k], op)
    return fix_zero(v, row, op)


def fold_rows(x, out, init, with_init, chunk):
    """OP-fold over R of the 3-D array x (O, R, 1): rows, some chunk at least the
    length the tree or lane folds need (:func:`fold` picks). Output-parallel: iteration
    g owns out[o, c] for a group of up to _GROUP consecutive (o, c), each the fold of
    chunk c (``chunk`` contiguous elements; the last may be shorter) of row o, combined
    as combine(init, fold) when ``with_init``. Add and multiply fold as the tree
    (:func:`_fold_tree`: for floats the result depends on the order; integers wrap,
    exact in any order), the other ops in lanes (:func:`_fold_row`: their results do
    not depend on the order); a last chunk shorter than those need folds left to right.
    Chunks depend on the shapes only, never on the thread count.

    The chunks are taken one after another, so each thread reads one stream from
    memory (its groups are consecutive). Measured on an AVX-512 EPYC, 4096 x 4096 f32
    (2026-11-26): taking 4 rows in step instead (4 streams 16 KiB apart) was slower (one
    thread 2.88 vs 2.02 ms, two threads 1.43 vs 1.21 ms min, sums), and so were
    software prefetches 1-4 KiB ahead (max 2.0 -> 2.8-3.0 ms, one thread). Rows in step
    had been faster on an AVX2 EPYC (one thread 3.36 vs 4.24 ms): re-measure there.
    """
    n_o = x.shape[0]
    r = x.shape[1]
    nc = out.shape[1]
    n_t = n_o * nc
    flat = x.reshape(n_o * r)  # C-contiguous rows (a [o, lo:hi, 0] view is not)
    outs = out.reshape(n_t)  # (iteration t's output is outs[t])
    span = min(r, chunk)
    tree = OP == ADD or OP == MUL  # (a compile-time constant)
    width = span // 8 + span // 64 + 16 if tree else _LANES
    group = max(1, min(_GROUP, n_t // 8))  # (few rows: one per iteration)
    for g in prange((n_t + group - 1) // group):
        scratch = np.empty(width, x.dtype)  # (once per group of rows: measurably cheaper)
        for t in range(g * group, min(n_t, (g + 1) * group)):
            o = t // nc
            c = t - o * nc
            lo = c * chunk
            hi = min(r, lo + chunk)
            row = flat[o * r + lo : o * r + hi]
            if hi - lo < (_SHORT_BLOCKS if tree else _SHORT):
                v = _fold_left(row, 0, hi - lo, OP)
            elif OP == ADD or OP == MUL:  # (tree; spelt out, Numba prunes the other
                v = _fold_tree(row, scratch, OP)  # fold: it is not compiled at all)
            else:
                v = _fold_row(row, scratch, OP)
            outs[t] = combine(init, v, OP) if with_init else v


def fold_left(x, out, init, with_init, chunk):
    """OP-fold over R of the 3-D array x (O, R, I) where every output is a left fold
    (:func:`fold` picks): the few loops the common small reductions need, compiled
    apart from :func:`fold_rows`'s tree and lane folds. Output-parallel either way:

    * I == 1 (rows whose chunks are all shorter than the tree or lane folds need):
      iteration t owns out[o, c], chunk c of row o (``chunk`` contiguous elements, the
      last may be shorter) folded left to right, combined as combine(init, fold) when
      ``with_init`` (as :func:`fold_rows` folds a short chunk).
    * I > 1 (columns): iteration t owns out[o, lo:hi], ``chunk`` columns of output row
      o, folding x[o, :, lo:hi] into it left to right from the init value (the
      reference's order); the inner loop runs over contiguous columns.

    Chunks depend on the shapes only, never on the thread count."""
    n_o = x.shape[0]
    r = x.shape[1]
    n_i = x.shape[2]
    if n_i == 1:
        nc = out.shape[1]
        for t in prange(n_o * nc):
            o = t // nc
            c = t - o * nc
            lo = c * chunk
            hi = lo + chunk if lo + chunk < r else r
            v = x[o, lo, 0]
            for k in range(lo + 1, hi):
                v = combine(v, x[o, k, 0], OP)
            out[o, c] = combine(init, v, OP) if with_init else v
        return
    nb = (n_i + chunk - 1) // chunk
    for t in prange(n_o * nb):
        o = t // nb
        b = t - o * nb
        lo = b * chunk
        hi = lo + chunk if lo + chunk < n_i else n_i  # (min() compiles a helper)
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


def fold(code, n, x, out, init, with_init, chunk):
    """Op ``code``'s fold of the 3-D array x (O, R, I) over R into ``out``: (O, I), or
    (O, chunks of R) for rows (I == 1) folded in chunks of ``chunk`` elements, combined
    with the init value when ``with_init`` (:func:`fold_left`, :func:`fold_rows`; the
    serial or parallel variant by the element count ``n``). Rows take the tree or lane
    folds when their chunks are long enough for them, so those loops compile only for
    calls that need them."""
    short = _SHORT_BLOCKS if code == ADD or code == MUL else _SHORT
    if x.shape[2] > 1 or min(x.shape[1], chunk) < short:
        FOLD_LEFT[code](n, x, out, init, with_init, chunk)
    else:
        FOLD_ROWS[code](n, x, out, init, with_init, chunk)


FOLD_LEFT = per_op(fold_left)
FOLD_ROWS = per_op(fold_rows)


# ---------------------------------------------------------------------------------------
# Compiled bodies: the generic reduce's pairwise tree with the body as a small program
# ---------------------------------------------------------------------------------------

# opcodes of a body program (xops.ops._bodies.trace_program writes them): each row of
# the program is (opcode, destination, operand a, operand b) over the register file
P_ADD, P_SUB, P_MUL, P_DIV, P_MAX, P_MIN, P_NEG, P_ABS, P_EXP, P_LOG1P, P_SQRT = range(11)
PROGRAM_OPS = {  # spec name -> (opcode, operand count)
    "add": (P_ADD, 2),
    "subtract": (P_SUB, 2),
    "multiply": (P_MUL, 2),
    "divide": (P_DIV, 2),
    "maximum": (P_MAX, 2),
    "minimum": (P_MIN, 2),
    "negate": (P_NEG, 1),
    "abs": (P_ABS, 1),
    "exponential": (P_EXP, 1),
    "log_plus_one": (P_LOG1P, 1),
    "sqrt": (P_SQRT, 1),
}
_PROGRAM_NAMES = {code: name for name, (code, _) in PROGRAM_OPS.items()}


def program_fold(x, out, init, prog, consts, res):
    """out[o] = the generic reduce's tree of row o of the 2-D C-contiguous float32 or
    float64 x (at least one column) with the body program ``prog`` (result register
    ``res``, constants ``consts`` in registers 2, 3, ...): each level pairs neighbours
    (2i, 2i+1) and leaves an odd element out waiting at its right end; the top of the
    tree then combines with the waiting elements (the latest level's first), and the
    init value comes in once, leftmost: body(init, tree), as
    xops.ops.reduction._reduce_generic. The program runs as one generated loop, compiled
    once per program (xops.kernels.programs.tree_fold: output-parallel, in an order
    fixed by the shapes alone)."""
    _programs.fold_rows(x, out, init, prog, consts, res, _PROGRAM_NAMES)
