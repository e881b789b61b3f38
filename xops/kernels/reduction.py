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
every SIMD width (AVX2 or AVX-512) and every thread count. Rows of one length are taken
_ROWS at a time, in step (more loads in flight from memory), each in its own order.
(A lane order for float sums is not a tree the spec allows, so xops does not use
it there.)

**Compiled bodies.** :func:`program_fold` runs the generic reduce's pairwise tree (see
xops.ops.reduction) with a body traced into a program of elementwise float ops
(:data:`PROGRAM_OPS`), compiled into one generated loop per program
(xops.kernels.programs).

**Maximum/minimum in vector loops.** :func:`lane_combine` takes NumPy's maximum/minimum
(NaN-propagating, vectorisable) and may pick either zero of a -0/+0 tie;
:func:`fix_zero` rescans the (rare) zero results for the zero IEEE 754-2019 picks.

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
_ROWS = 4  # rows (of one length) the row folds take in step
_LANES_IN_STEP = 1 << 21  # elements from which the lane fold takes rows in step


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


def _tree_groups(fmul):
    """An intrinsic ``f(src, i, dst, j)``: dst[j + g] = the balanced tree
    ((s0 s1)(s2 s3))((s4 s5)(s6 s7)) of the 8 neighbours s = src[i + 8g : i + 8g + 8],
    for g = 0..7 (64 elements in, 8 out; fadd, or fmul when ``fmul``). Written as LLVM
    vector instructions: each level pairs even and odd lanes of two 8-lane vectors with
    shufflevector, then one vector fadd/fmul, IEEE in every lane (no fast-math flags), so
    every output is that scalar tree exactly, whatever SIMD width the CPU has. The
    caller keeps i + 64 <= len(src) and j + 8 <= len(dst) (1-D C-contiguous arrays)."""

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
            vec = ir.VectorType(elt, 8)
            sp = builder.bitcast(builder.gep(s.data, [args[1]]), vec.as_pointer())
            vs = [
                builder.load(builder.gep(sp, [ir.Constant(ir.IntType(64), k)]), align=size)
                for k in range(8)
            ]

            def mask(*lanes):
                return ir.Constant(ir.VectorType(ir.IntType(32), 8), list(lanes))

            # levels 1 and 2 pair lanes inside each 128-bit half (one vshufps each on
            # x86); level 3 pairs the halves: the lanes come out in group order
            masks = [
                (mask(0, 2, 8, 10, 4, 6, 12, 14), mask(1, 3, 9, 11, 5, 7, 13, 15)),
                (mask(0, 2, 8, 10, 4, 6, 12, 14), mask(1, 3, 9, 11, 5, 7, 13, 15)),
                (mask(0, 1, 2, 3, 8, 9, 10, 11), mask(4, 5, 6, 7, 12, 13, 14, 15)),
            ]
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
            dp = builder.bitcast(builder.gep(d.data, [args[3]]), vec.as_pointer())
            builder.store(vs[0], dp, align=size)
            return context.get_dummy_value()

        return types.void(src, types.intp, dst, types.intp), codegen

    return groups


_add_groups = _tree_groups(False)
_mul_groups = _tree_groups(True)


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
    for c in range(q):
        if op == MUL:
            _mul_groups(src, 64 * c, dst, 8 * c)
        else:
            _add_groups(src, 64 * c, dst, 8 * c)
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
def _fold_tree(blk, scratch, vals, op):
    """Fold each row of the 2-D C-contiguous ``blk`` (rows of n >= _SHORT_BLOCKS
    elements) with float add or multiply (``op``) into ``vals``, as a tree whose in-order
    traversal is row[0], ..., row[n-1] (so a schedule the spec allows for any body):
    each pass turns the values left of its tail (the last m % 64) into the balanced trees
    of 8 neighbours (:func:`_tree_groups`, SIMD), the tail folded left to right; passes
    repeat while 64 or more values are left, these fold left to right, then combine with
    the tails, the latest pass's first (each tail is the right neighbour of what the
    later passes covered). The first pass (the one that reads the rows) takes the rows
    in step: several streams from memory keep more loads in flight than one (a row at a
    time was ~20% behind PyTorch on rows in DRAM). ``scratch``: per row of blk, at least
    n // 8 + n // 64 + 16 elements."""
    n = blk.shape[1]
    q = n // 64
    for c in range(q):
        for j in range(blk.shape[0]):
            if op == MUL:
                _mul_groups(blk[j], 64 * c, scratch[j], 8 * c)
            else:
                _add_groups(blk[j], 64 * c, scratch[j], 8 * c)
    for j in range(blk.shape[0]):
        row = blk[j]
        tail = _fold_left(row, 64 * q, n, op) if n > 64 * q else row[0]
        vals[j] = _tree_finish(scratch[j], n, tail, op)


@scalar
def _lane_steps(row, acc, k, op):
    """Step k of :func:`_fold_row` on ``row``: its step tree into lane accumulators."""
    b = k * _STEP
    x0 = row[b : b + _LANES]
    x1 = row[b + _LANES : b + 2 * _LANES]
    x2 = row[b + 2 * _LANES : b + 3 * _LANES]
    x3 = row[b + 3 * _LANES : b + 4 * _LANES]
    for j in range(_LANES):
        step = lane_combine(lane_combine(x0[j], x1[j], op), lane_combine(x2[j], x3[j], op), op)
        acc[j] = step if k == 0 else lane_combine(acc[j], step, op)


@scalar
def _lane_finish(row, acc, steps, op):
    """:func:`_fold_row` after its ``steps`` lane steps: the lanes' tree, the tail."""
    n = row.shape[0]
    v = row[0]
    tail = 1
    if steps:
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


@scalar
def _fold_row(blk, acc, vals, op):
    """Fold each row of the 2-D ``blk`` (rows of n >= _SHORT elements) with ``op`` into
    ``vals``, in _LANES lanes: with L = _LANES, lane j takes the step tree (row[b+j]
    row[b+L+j]) (row[b+2L+j] row[b+3L+j]) of each step of _STEP elements (from b): the
    first step's as its start value, the others combined into it in step order. The
    lanes then combine as a balanced tree in lane order, and the tail after the last
    whole step folds in left to right. The order is written out element by element, so
    the result is the same whatever SIMD width the loop compiles to. The rows' steps are
    taken in step (as :func:`_fold_tree`). ``acc``: _LANES accumulators per row."""
    steps = blk.shape[1] // _STEP
    if blk.shape[0] == 1:  # (one row: its lanes stay in registers, ~30% faster in cache)
        row = blk[0]
        lanes = acc[0]
        for k in range(steps):
            _lane_steps(row, lanes, k, op)
    else:
        for k in range(steps):
            for j in range(blk.shape[0]):
                _lane_steps(blk[j], acc[j], k, op)
    for j in range(blk.shape[0]):
        vals[j] = _lane_finish(blk[j], acc[j], steps, op)


def fold_rows(x, out, init, with_init, chunk):
    """OP-fold over R of the 3-D array x (O, R, 1): rows, some chunk at least the
    length the tree or lane folds need (:func:`fold` picks). Output-parallel: iteration
    t owns out[o, c], the fold of chunk c (``chunk`` contiguous elements; the last may
    be shorter) of row o, combined as combine(init, fold) when ``with_init``. Add and
    multiply fold as the tree (:func:`_fold_tree`: for floats the result depends on the
    order; integers wrap, exact in any order), the other ops in lanes
    (:func:`_fold_row`: their results do not depend on the order); a last chunk shorter
    than those need folds left to right. A group's rows are taken _ROWS at a time
    where they are chunks of one length (the same arithmetic per row). Chunks depend on
    the shapes only, never on the thread count."""
    n_o = x.shape[0]
    r = x.shape[1]
    nc = out.shape[1]
    n_t = n_o * nc
    flat = x.reshape(n_o * r)  # C-contiguous rows (a [o, lo:hi, 0] view is not)
    outs = out.reshape(n_t)  # (iteration t's output is outs[t])
    span = min(r, chunk)
    tree = OP == ADD or OP == MUL  # (a compile-time constant)
    width = span // 8 + span // 64 + 16 if tree else _LANES
    # chunks of one length, long enough for the lanes or trees: _ROWS in step (the
    # lanes only from memory: in cache, one row at a time keeps its lanes in
    # registers, measured ~30% faster on 64 x 4096 f32)
    in_step = span >= (_SHORT_BLOCKS if tree else _SHORT) and r % span == 0
    in_step = in_step and (tree or n_o * r >= _LANES_IN_STEP)
    group = max(1, min(_GROUP, n_t // 8))  # (few rows: one per iteration)
    for g in prange((n_t + group - 1) // group):
        scratch = np.empty((_ROWS, width), x.dtype)  # (once per group of rows:
        vals = np.empty(_ROWS, x.dtype)  # measurably cheaper)
        t = g * group
        end = min(n_t, (g + 1) * group)
        while t < end:
            o = t // nc
            c = t - o * nc
            lo = c * chunk
            hi = min(r, lo + chunk)
            k = _ROWS if in_step and t + _ROWS <= end else 1
            # (in step: chunks t, t+1, ... of one length lie one after another)
            blk = flat[o * r + lo : o * r + lo + k * (hi - lo)].reshape((k, hi - lo))
            if hi - lo < (_SHORT_BLOCKS if tree else _SHORT):  # (then k == 1)
                vals[0] = _fold_left(blk[0], 0, hi - lo, OP)
            elif OP == ADD or OP == MUL:  # (tree; spelt out, Numba prunes the other
                _fold_tree(blk, scratch, vals, OP)  # fold: it is not compiled at all)
            else:
                _fold_row(blk, scratch, vals, OP)
            for j in range(k):
                outs[t + j] = combine(init, vals[j], OP) if with_init else vals[j]
            t += k


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
