"""Kernels of ``xops.nn``'s fused activations (one pass where the composite takes two).

relu's value ``0 if x <= 0 else x`` and its gradient ``0 if x <= 0 else g`` are the
composite's ``compare(x, 0, "LE")`` + ``select`` in one loop: the comparison reads the
operand as numbers (NaN compares False, -0.0 <= 0), the result is copied as a raw bit
pattern (``x_bits`` / ``g_bits``: the same memory as unsigned words of the element's
width), so NaN payloads pass unchanged, exactly as ``select_bits`` copies them. The
composite writes a boolean array and reads it back; this reads the operand once and
writes the result once.

Both loops are **output-parallel**: iteration ``i`` reads element ``i`` and writes only
``out[i]``, so results never depend on the thread count.
"""

from numba import prange

from .config import kernel


@kernel
def relu_bits(x, x_bits, out):
    """Output-parallel. ``out[i] = 0 if x[i] <= 0 else x_bits[i]`` (``x_bits``: x's own
    memory as unsigned words; ``out``: words of the same width)."""
    zero = out.dtype.type(0)
    for i in prange(out.size):
        b = x_bits[i]
        out[i] = zero if x[i] <= 0 else b


@kernel
def relu_grad_bits(x, g_bits, out):
    """Output-parallel. ``out[i] = 0 if x[i] <= 0 else g_bits[i]`` (relu's cotangent rule:
    x = 0 gives 0, a NaN x passes g)."""
    zero = out.dtype.type(0)
    for i in prange(out.size):
        b = g_bits[i]
        out[i] = zero if x[i] <= 0 else b
