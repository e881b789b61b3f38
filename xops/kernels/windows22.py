"""2x2 windows at stride 2 over the last two dims (max pooling and its gradient), a
row of windows at a time in SIMD vectors.

A window row covers two operand rows, ``top`` and ``bottom``; window ``i`` holds
top[2i], top[2i+1], bottom[2i], bottom[2i+1] (row-major window order). A loop over
windows cannot vectorise on its own: each vector of windows needs the even and the odd
elements of two operand vectors, and rows of 7 or 14 windows (28 x 28 and 14 x 14
feature maps) are shorter than a 16-lane vector, so LLVM leaves such loops scalar (max
pooling's forward pass on (32,32,14,14) f32, AVX-512 EPYC: 123 us for 50k windows,
where a byte copy of the operand takes 18 us). The intrinsics below write that step
in LLVM IR: load ``2L`` neighbours of each row, split them into even and odd lanes
(shufflevector), combine lane-wise, and for the gradient, interleave the results back.
A row of ``n`` windows takes vectors of the widest lane count ``L <= n`` (16, 8 or 4
floats; 8, 4 or 2 doubles); where ``L`` does not divide ``n`` the last vector starts at
``n - L`` and recomputes some windows (every output is a function of its position
alone, so it is written twice with the same value). Rows of fewer windows than the
narrowest vector take one-lane vectors (the same operations); integer types run the
scalar loops.

Results, lane by lane:

* :func:`reduce22` (reduce_window, maximum or minimum): the fold of init, t0, t1, b0,
  b1, IEEE 754-2019 maximum / minimum (-0 < +0; NaN if any element is NaN) in three
  compare-selects a step. A NaN result is the window's first NaN in that order,
  quieted: the same value as ``combine``'s in every case, and a payload fixed by the
  data alone (the scalar ``a + b`` leaves the choice between two NaNs to the compiler,
  which may commute the add);
* :func:`select_scatter22` (select_and_scatter): the running select of row-major
  window order, ``select(pick, candidate)`` one ordered compare (a NaN compares false,
  as in the body), then ``combine(init, source)`` at the picked position and ``init``
  at the other three, for scatter add, multiply (IEEE fadd / fmul, as the scalar
  loops), maximum and minimum (as above).

No fast-math flags anywhere: the same bits whatever the vector width (AVX2 splits a
16-lane vector into two 8-lane halves) and the thread count. Measured (AVX-512 EPYC,
2 threads, medians, us; the kernels on their own): max pooling 2x2 / 2 forward on
(1024, 14, 14) f32 98 -> 27-55 and on (512, 28, 28) 107 -> 45-83, its gradient
(select GE, scatter add) 87 -> 39-41 and 94 -> 48-74; compiled for AVX2
(``NUMBA_CPU_FEATURES``) forward 150 -> 34, gradient 398 -> 55 on (1024, 14, 14).
"""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .config import scalar
from .reduction import ADD, GE, GT, LE, LT, MAX, MIN, MUL, combine, select_keeps

_LANES = {4: (16, 8, 4), 8: (8, 4, 2)}  # element bytes -> vector widths, widest first
_COMPARE = {GE: ">=", GT: ">", LE: "<=", LT: "<"}
_VECTOR_OPS = (ADD, MUL, MAX, MIN)  # combine ops the intrinsics compile


def reduce22(x, top, bottom, out, o, n, init, op):
    """out[o + i] = the fold from ``init`` (maximum or minimum, a compile-time op code)
    of window i of the row pair starting at x[top] and x[bottom], for i < n (1-D
    C-contiguous ``x`` and ``out``, element offsets). Callable from Numba kernels only."""
    raise NotImplementedError("reduce22 is only callable from Numba kernels")


def select_scatter22(x, top, bottom, source, s, out, n, init, sel, op):
    """For each window i < n of the row pair starting at x[top] and x[bottom], its pick
    (``select_keeps`` code ``sel``, the row-major running select) gets
    combine(init, source[s + i], op) in ``out`` (laid out as ``x``: the same offsets),
    the window's other three positions ``init``. 1-D C-contiguous arrays, element
    offsets. Callable from Numba kernels only."""
    raise NotImplementedError("select_scatter22 is only callable from Numba kernels")


# ---------------------------------------------------------------------------------------
# LLVM IR pieces
# ---------------------------------------------------------------------------------------


def _lane_mask(values):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(values)), list(values))


def _load_pair(builder, arr, start, vec, size):
    """The 2L elements arr[start : start + 2L] as (even lanes, odd lanes)."""
    lanes = vec.count
    ptr = builder.bitcast(builder.gep(arr.data, [start]), vec.as_pointer())
    lo = builder.load(ptr, align=size)
    hi = builder.load(builder.gep(ptr, [ir.Constant(ir.IntType(64), 1)]), align=size)
    even = builder.shuffle_vector(lo, hi, _lane_mask(range(0, 2 * lanes, 2)))
    odd = builder.shuffle_vector(lo, hi, _lane_mask(range(1, 2 * lanes, 2)))
    return even, odd


def _store_pair(builder, arr, start, even, odd, size):
    """arr[start + 2k] = even[k], arr[start + 2k + 1] = odd[k]."""
    lanes = even.type.count
    both = builder.shuffle_vector(
        even, odd, _lane_mask([v for k in range(lanes) for v in (k, lanes + k)])
    )
    ptr = builder.bitcast(builder.gep(arr.data, [start]), both.type.as_pointer())
    builder.store(both, ptr, align=size)


def _splat(builder, value, vec):
    one = builder.insert_element(
        ir.Constant(vec, ir.Undefined), value, ir.Constant(ir.IntType(32), 0)
    )
    return builder.shuffle_vector(one, ir.Constant(vec, ir.Undefined), _lane_mask([0] * vec.count))


def _combiner(builder, op, vec, bits):
    """a, b -> combine(a, b, op) lane-wise on ``bits``-bit floats: fadd / fmul (IEEE, no
    fast-math flags), or IEEE 754-2019 maximum / minimum (the larger / smaller, -0 < +0)
    in three compare-selects, a NaN operand returned as it is (a's if both are NaN):
    apply :func:`_quiet` to the end result."""
    if op == ADD:
        return builder.fadd
    if op == MUL:
        return builder.fmul
    ints = ir.VectorType(ir.IntType(bits), vec.count)

    def pick(a, b):
        # the larger (smaller) of two numbers: compare-select (vmaxps / vminps)
        r = builder.select(builder.fcmp_ordered(">" if op == MAX else "<", a, b), a, b)
        # equal: a AND b (OR for minimum) in bits is the same number, or of two zeros
        # +0 (-0) unless both are -0 (+0)
        ia, ib = builder.bitcast(a, ints), builder.bitcast(b, ints)
        tie = builder.bitcast(builder.and_(ia, ib) if op == MAX else builder.or_(ia, ib), vec)
        r = builder.select(builder.fcmp_ordered("==", a, b), tie, r)
        # NaNs: a where a is one, else b where b is one (the select above gave b): the
        # first NaN of a fold; :func:`_quiet` quiets it once at the end
        return builder.select(builder.fcmp_unordered("uno", a, a), a, r)

    return pick


def _quiet(builder, v, bits):
    """v with each NaN lane quieted (its quiet bit set), as an arithmetic op's NaN
    result would be (``combine``'s ``a + b``)."""
    ints = ir.VectorType(ir.IntType(bits), v.type.count)
    quiet_bit = ir.Constant(ints, [1 << (22 if bits == 32 else 51)] * v.type.count)
    quieted = builder.bitcast(builder.or_(builder.bitcast(v, ints), quiet_bit), v.type)
    return builder.select(builder.fcmp_unordered("uno", v, v), quieted, v)


def _flat(*arrays):
    return all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" for a in arrays)


def _at(builder, arr, offset, vec, size):
    """The ``vec`` at arr[offset] (element alignment)."""
    ptr = builder.bitcast(builder.gep(arr.data, [offset]), vec.as_pointer())
    return builder.load(ptr, align=size)


def _reduce_intrinsic(lanes, op):
    """f(x, t, b, out, o, init): windows i < lanes of the row pair at x[t], x[b] into
    out[o + i] (:func:`reduce22`)."""

    @intrinsic
    def windows(typingctx, x, t, b, out, o, init):
        if not _flat(x, out):
            return None

        def codegen(context, builder, sig, args):
            xa = context.make_array(sig.args[0])(context, builder, args[0])
            oa = context.make_array(sig.args[3])(context, builder, args[3])
            dtype = sig.args[0].dtype
            size = dtype.bitwidth // 8
            vec = ir.VectorType(context.get_data_type(dtype), lanes)
            pick = _combiner(builder, op, vec, 8 * size)
            acc = _splat(builder, args[5], vec)
            for start in (args[1], args[2]):
                even, odd = _load_pair(builder, xa, start, vec, size)
                acc = pick(pick(acc, even), odd)
            acc = _quiet(builder, acc, 8 * size)
            ptr = builder.bitcast(builder.gep(oa.data, [args[4]]), vec.as_pointer())
            builder.store(acc, ptr, align=size)
            return context.get_dummy_value()

        return types.void(x, types.intp, types.intp, out, types.intp, init), codegen

    return windows


def _select_intrinsic(lanes, sel, op):
    """f(x, t, b, source, s, out, init): windows i < lanes of the row pair at x[t],
    x[b] (:func:`select_scatter22`)."""

    @intrinsic
    def windows(typingctx, x, t, b, source, s, out, init):
        if not _flat(x, source, out):
            return None

        def codegen(context, builder, sig, args):
            xa, sa, oa = (
                context.make_array(sig.args[k])(context, builder, args[k]) for k in (0, 3, 5)
            )
            dtype = sig.args[0].dtype
            size = dtype.bitwidth // 8
            vec = ir.VectorType(context.get_data_type(dtype), lanes)
            index = ir.VectorType(ir.IntType(32), lanes)
            t, b = args[1], args[2]
            elements = [
                *_load_pair(builder, xa, t, vec, size),
                *_load_pair(builder, xa, b, vec, size),
            ]
            pick, arg = elements[0], ir.Constant(index, [0] * lanes)
            for k in (1, 2, 3):  # the running select, row-major (select_keeps)
                keep = builder.fcmp_ordered(_COMPARE[sel], pick, elements[k])
                pick = builder.select(keep, pick, elements[k])
                arg = builder.select(keep, arg, ir.Constant(index, [k] * lanes))
            init = _splat(builder, args[6], vec)
            value = _combiner(builder, op, vec, 8 * size)(
                init, _at(builder, sa, args[4], vec, size)
            )
            if op in (MAX, MIN):
                value = _quiet(builder, value, 8 * size)
            outs = [
                builder.select(
                    builder.icmp_signed("==", arg, ir.Constant(index, [k] * lanes)), value, init
                )
                for k in range(4)
            ]
            _store_pair(builder, oa, t, outs[0], outs[1], size)
            _store_pair(builder, oa, b, outs[2], outs[3], size)
            return context.get_dummy_value()

        return types.void(x, types.intp, types.intp, source, types.intp, out, init), codegen

    return windows


# ---------------------------------------------------------------------------------------
# The row functions: vectors where the type allows, else the scalar loops
# ---------------------------------------------------------------------------------------


@scalar
def _reduce_scalar(x, top, bottom, out, o, n, init, op):
    """:func:`reduce22` one window at a time with ``combine`` (integer types)."""
    for i in range(n):
        v = combine(init, x[top + 2 * i], op)
        v = combine(v, x[top + 2 * i + 1], op)
        v = combine(v, x[bottom + 2 * i], op)
        out[o + i] = combine(v, x[bottom + 2 * i + 1], op)


@scalar
def _select_scatter_scalar(x, top, bottom, source, s, out, n, init, sel, op):
    """:func:`select_scatter22` one window at a time (integer types)."""
    for i in range(n):
        t, b = top + 2 * i, bottom + 2 * i
        p = x[t]
        k = 0
        v = x[t + 1]
        if not select_keeps(p, v, sel):
            p, k = v, 1
        v = x[b]
        if not select_keeps(p, v, sel):
            p, k = v, 2
        if not select_keeps(p, x[b + 1], sel):
            k = 3
        v = combine(init, source[s + i], op)
        out[t] = v if k == 0 else init
        out[t + 1] = v if k == 1 else init
        out[b] = v if k == 2 else init
        out[b + 1] = v if k == 3 else init


def _literal(code):
    return code.literal_value if isinstance(code, types.IntegerLiteral) else None


def _vector_widths(dtype):
    """The vector widths for ``dtype`` (widest first), or None where it has none."""
    if not isinstance(dtype, types.Float):
        return None
    return _LANES.get(dtype.bitwidth // 8)


_made = {}  # (kind, lanes, codes) -> intrinsic (built once per process)


def _made_once(key, build):
    if key not in _made:
        _made[key] = build()
    return _made[key]


@overload(reduce22, prefer_literal=True, inline="always")
def _reduce22(x, top, bottom, out, o, n, init, op):
    code = _literal(op)
    widths = _vector_widths(x.dtype)
    if code not in (MAX, MIN) or widths is None:
        return lambda x, top, bottom, out, o, n, init, op: _reduce_scalar(
            x, top, bottom, out, o, n, init, op
        )
    w1, w2, w3, w0 = (
        _made_once(("reduce", k, code), lambda k=k: _reduce_intrinsic(k, code))
        for k in (*widths, 1)
    )
    l1, l2, l3 = widths

    def vector(x, top, bottom, out, o, n, init, op):
        if n >= l1:
            j = 0
            while j + l1 <= n:
                w1(x, top + 2 * j, bottom + 2 * j, out, o + j, init)
                j += l1
            if j < n:
                j = n - l1
                w1(x, top + 2 * j, bottom + 2 * j, out, o + j, init)
        elif n >= l2:
            w2(x, top, bottom, out, o, init)
            j = n - l2
            w2(x, top + 2 * j, bottom + 2 * j, out, o + j, init)
        elif n >= l3:
            w3(x, top, bottom, out, o, init)
            j = n - l3
            w3(x, top + 2 * j, bottom + 2 * j, out, o + j, init)
        else:  # one window a step (the same operations)
            for j in range(n):
                w0(x, top + 2 * j, bottom + 2 * j, out, o + j, init)

    return vector


@overload(select_scatter22, prefer_literal=True, inline="always")
def _select_scatter22(x, top, bottom, source, s, out, n, init, sel, op):
    sel_code, op_code = _literal(sel), _literal(op)
    widths = _vector_widths(x.dtype)
    if sel_code not in _COMPARE or op_code not in _VECTOR_OPS or widths is None:
        return lambda x, top, bottom, source, s, out, n, init, sel, op: _select_scatter_scalar(
            x, top, bottom, source, s, out, n, init, sel, op
        )
    w1, w2, w3, w0 = (
        _made_once(
            ("select", k, sel_code, op_code), lambda k=k: _select_intrinsic(k, sel_code, op_code)
        )
        for k in (*widths, 1)
    )
    l1, l2, l3 = widths

    def vector(x, top, bottom, source, s, out, n, init, sel, op):
        if n >= l1:
            j = 0
            while j + l1 <= n:
                w1(x, top + 2 * j, bottom + 2 * j, source, s + j, out, init)
                j += l1
            if j < n:
                j = n - l1
                w1(x, top + 2 * j, bottom + 2 * j, source, s + j, out, init)
        elif n >= l2:
            w2(x, top, bottom, source, s, out, init)
            j = n - l2
            w2(x, top + 2 * j, bottom + 2 * j, source, s + j, out, init)
        elif n >= l3:
            w3(x, top, bottom, source, s, out, init)
            j = n - l3
            w3(x, top + 2 * j, bottom + 2 * j, source, s + j, out, init)
        else:  # one window a step (the same operations)
            for j in range(n):
                w0(x, top + 2 * j, bottom + 2 * j, source, s + j, out, init)

    return vector
