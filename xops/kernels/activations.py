"""Kernels of ``xops.nn``'s fused activations (one pass where the composite takes two).

relu's value ``0 if x <= 0 else x`` and its gradient ``0 if x <= 0 else g`` are the
composite's ``compare(x, 0, "LE")`` + ``select`` in one loop: the comparison reads the
operand as numbers (NaN compares False, -0.0 <= 0), the result is copied as a raw bit
pattern (``v_bits``: the same memory as unsigned words of the element's width), so NaN
payloads pass unchanged, exactly as ``select_bits`` copies them. The composite writes a
boolean array and reads it back; this reads the operand once and writes the result
once.

The loop is **output-parallel**: iteration ``i`` reads element ``i`` and writes only
``out[i]``, so results never depend on the thread count.
"""

from numba import prange

from .config import kernel


@kernel
def zero_where_le0_bits(x, v_bits, out):
    """Output-parallel. ``out[i] = 0 if x[i] <= 0 else v_bits[i]``: relu's value (v = x:
    ``v_bits`` is x's own memory as unsigned words) and its cotangent rule (v = g: x = 0
    gives 0, a NaN x passes g); ``out``: words of v's width."""
    zero = out.dtype.type(0)
    for i in prange(out.size):
        b = v_bits[i]
        out[i] = zero if x[i] <= 0 else b
