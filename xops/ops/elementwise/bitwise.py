"""Bitwise and logical elementwise ops: not, and, or, xor (logical for i1, bitwise for
integers), popcnt, count_leading_zeros and the three shifts.

Integer and boolean results never record a gradient node, so no op here has a rule.
Shifts and count_leading_zeros run Numba kernels (``xops.kernels.elementwise``) on the
operands' bit patterns: the shifts on int32 or int64 words (narrower types widened to
int32), on one core below ``K.PARALLEL_MAP_THRESHOLD`` elements, with a dispatch fast
path for two same-shape Tensors of a 32- or 64-bit type.
"""

import keyword

import numpy as np

from ...autodiff.tape import primitive
from ...dtypes import all_dtypes
from ...kernels import elementwise as K
from ...tensor import Tensor, _wrap
from .._core import compute, result
from ._base import _B, _INT, _SI, _UI, _binary, _same, _same2, _unary, _word_pair, words

__all__ = [
    "not_",
    "popcnt",
    "count_leading_zeros",
    "and_",
    "or_",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
]


def _logical(op, lhs, rhs, ufunc):
    """and, or, xor: logical for i1, bitwise for integers (NumPy's bitwise ufuncs are
    both)."""
    x, y = _binary(op, lhs, rhs, (_B, _SI, _UI))
    return _same2(x, y, ufunc)


def _shift_words(kern, a, b, bits):
    """The shift ``kern`` (K.shift_left, ...) of the int32 or int64 words ``a`` by ``b``
    (1-D, contiguous) in a ``bits``-wide type: a new array of the words' type."""
    out = np.empty_like(a)
    if bits == 32:  # 32-bit lanes
        if kern is K.shift_right_arithmetic:
            K.run_memory_bound(K.shift_right_arithmetic32, out.size, a, b, out)
        else:
            K.run_memory_bound(
                K.shift_logical32, out.size, a, b, out, kern is K.shift_right_logical
            )
    else:
        K.run_memory_bound(kern, out.size, a, b, out, bits)
    return out


def _shift(op, lhs, rhs, kern):
    """The shifts: a Numba kernel on both operands' bit patterns as int32 or int64 words
    (32- and 64-bit types: their own arrays, no copy), given the type's bit width."""
    x, y = _binary(op, lhs, rhs, _INT)
    dt = x._dtype
    a, b, shape = _word_pair(x, y, True)
    out = _shift_words(kern, a, b, dt.bits).reshape(shape)
    if dt.bits in (32, 64):
        return _wrap(out.view(dt.np), dt)
    return result(out, dt)


# 32- and 64-bit integer types held as themselves -> their word type (the fast path's)
_WORDS = {
    id(d): np.int32 if d.bits == 32 else np.int64
    for d in all_dtypes()
    if d.kind in _INT and d.bits in (32, 64) and d.compute == d.np
}


def _shift_fast(kern):
    """The dispatch fast path (``op._fast``, see xops.autodiff.tape.primitive) of a
    shift: two Tensors of one 32- or 64-bit integer type, one shape, C-contiguous host
    arrays run the kernel with no other check (the full path's checks all pass for
    them, and integers never require a gradient); any other call returns None."""

    def fast(args):
        if len(args) != 2:
            return None
        x, y = args
        if type(x) is not Tensor or type(y) is not Tensor or y._dtype is not x._dtype:
            return None
        word = _WORDS.get(id(x._dtype))
        a, b = x._value, y._value
        if (
            word is None
            or type(a) is not np.ndarray
            or type(b) is not np.ndarray
            or a.shape != b.shape
            or not (a.flags.c_contiguous and b.flags.c_contiguous)
        ):
            return None
        if a.ndim == 1 and a.dtype.type is word:  # no views: ~1 of 4 us at 1K (issue 15)
            return _wrap(_shift_words(kern, a, b, x._dtype.bits), x._dtype)
        out = _shift_words(kern, words(a, word), words(b, word), x._dtype.bits)
        return _wrap(out.reshape(a.shape).view(a.dtype), x._dtype)

    return fast


@primitive("not", elementwise=True)
def not_(operand):
    """stablehlo.not: logical NOT for i1, bitwise NOT for integers.

    >>> xo.not_(xo.tensor([True, False]))   # [False, True]
    xo.tensor([False,  True], i1[2])
    """
    x = _unary("not", operand, (_B, _SI, _UI))
    return _same(x, np.logical_not if x._dtype.kind == _B else np.invert)


def _bits_u64(x):
    """x's two's-complement bit patterns within its own width, as uint64."""
    v = compute(x).astype(np.int64 if x._dtype.kind == _SI else np.uint64).view(np.uint64)
    if x._dtype.bits < 64:
        v = v & np.uint64((1 << x._dtype.bits) - 1)
    return v


@primitive("popcnt", elementwise=True)
def popcnt(operand):
    """stablehlo.popcnt: number of set bits within the type's width (i64 -1 -> 64).

    >>> xo.popcnt(xo.tensor([0, 1, 2, 127], "i64"))   # [0, 1, 1, 7]
    xo.tensor([0, 1, 1, 7], i64[4])
    """
    x = _unary("popcnt", operand, _INT)
    dt = x._dtype
    if dt.bits in (32, 64):  # one pass over the array's own words, no widening
        word = np.int32 if dt.bits == 32 else np.int64
        a = np.ascontiguousarray(x._value).reshape(-1).view(word)
        out = np.empty_like(a)
        K.popcnt_words(out.size, a, out)
        return _wrap(out.reshape(x.shape).view(dt.np), dt)
    return result(np.bitwise_count(_bits_u64(x)), dt)


@primitive("count_leading_zeros", elementwise=True)
def count_leading_zeros(operand):
    """stablehlo.count_leading_zeros: clz(0) = bit width; counts within the type's width.

    >>> xo.count_leading_zeros(xo.tensor([0, 1, -1], "i64"))   # [64, 63, 0]
    xo.tensor([64, 63,  0], i64[3])
    """
    x = _unary("count_leading_zeros", operand, _INT)
    a = np.ascontiguousarray(_bits_u64(x).reshape(-1))
    out = np.empty_like(a)
    K.count_leading_zeros(out.size, a, out, x._dtype.bits)
    return result(out.reshape(x.shape), x._dtype)


def _logical_op(name, ufunc, example):
    """The primitive ``stablehlo.<name>`` (and, or, xor; Python name ``<name>_`` where
    ``name`` is a keyword): ``ufunc`` through :func:`_logical`. ``example``: its result
    on ``[1, 2]`` and ``[3, 4]``, shown in its docstring."""
    public = name + "_" if keyword.iskeyword(name) else name

    def fn(lhs, rhs):
        return _logical(name, lhs, rhs, ufunc)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = f"""stablehlo.{name}: logical for i1, bitwise for integers.

    >>> xo.{public}(xo.tensor([1, 2]), xo.tensor([3, 4]))   # {example}
    xo.tensor({example}, i64[2])
    """
    return primitive(name, elementwise=True)(fn)


and_ = _logical_op("and", np.bitwise_and, "[1, 0]")
or_ = _logical_op("or", np.bitwise_or, "[3, 6]")
xor = _logical_op("xor", np.bitwise_xor, "[2, 6]")


@primitive("shift_left", elementwise=True)
def shift_left(lhs, rhs):
    """stablehlo.shift_left: rhs is read as unsigned; amounts >= the bit width give 0.

    >>> xo.shift_left(xo.tensor([-1, 0, 1]), xo.tensor([1, 2, 3]))   # [-2, 0, 8]
    xo.tensor([-2,  0,  8], i64[3])
    """
    return _shift("shift_left", lhs, rhs, K.shift_left)


@primitive("shift_right_arithmetic", elementwise=True)
def shift_right_arithmetic(lhs, rhs):
    """stablehlo.shift_right_arithmetic: fills with the sign bit; amounts >= the bit
    width give all sign bits (0 or -1).

    >>> xo.shift_right_arithmetic(xo.tensor([-1, 0, 8]), xo.tensor([1, 2, 3]))   # [-1, 0, 1]
    xo.tensor([-1,  0,  1], i64[3])
    """
    return _shift("shift_right_arithmetic", lhs, rhs, K.shift_right_arithmetic)


@primitive("shift_right_logical", elementwise=True)
def shift_right_logical(lhs, rhs):
    """stablehlo.shift_right_logical: fills with zeros (signed values shift their bit
    pattern: i64 -1 >> 1 = 2^63 - 1); amounts >= the bit width give 0.

    >>> xo.shift_right_logical(xo.tensor([-1, 0, 8]), xo.tensor([1, 2, 3]))
    ... # [9223372036854775807, 0, 1]
    xo.tensor([9223372036854775807,                   0,                   1], i64[3])
    """
    return _shift("shift_right_logical", lhs, rhs, K.shift_right_logical)


for _op, _kern in (
    (shift_left, K.shift_left),
    (shift_right_arithmetic, K.shift_right_arithmetic),
    (shift_right_logical, K.shift_right_logical),
):
    _op._fast = _shift_fast(_kern)
del _op, _kern
