"""Kernels for the conversion ops (``xops.ops.conversion``).

Only ``reduce_precision`` needs a loop of its own: ``convert`` and ``bitcast_convert``
are whole-array NumPy casts, views and bit (un)packing.

The loop is **output-parallel**: iteration ``i`` reads ``x[i]`` and writes only
``out[i]``, so results never depend on the thread count. It is compiled for float32
and float64 arrays only (narrow floats arrive as their exact float32 values).
"""

import math

import numpy as np
from numba import prange

from .config import kernel


@kernel
def reduce_precision(
    x, out, mantissa_bits, round_mantissa, min_exponent, clamp, smallest_normal, overflow
):
    """Output-parallel. Round ``x`` to ``mantissa_bits`` explicit mantissa bits, ties to
    even, then (if ``clamp``) flush magnitudes below ``smallest_normal`` to +-0 and send
    those at or above ``overflow`` to +-inf.

    Written on values rather than bit patterns so that one loop serves every source
    format: the quantum is ``2**(max(e, min_exponent) - mantissa_bits)`` for a value
    ``2**e <= |x| < 2**(e+1)``, i.e. relative for the source format's normal numbers and
    fixed (``min_exponent`` is the format's smallest normal exponent) for its subnormals,
    which is exactly what rounding the raw mantissa field does. Scaling by ``ldexp`` is
    exact, and the scaled value is below 2**53, so ``rint`` rounds it exactly, ties to
    even. With no mantissa bits left the bit algorithm's "last mantissa bit" is the
    exponent's lowest bit, so a tie between 2**e and 2**(e+1) goes to the even biased
    exponent: to 2**e when e is odd (IEEE biases 2**(n-1)-1 are odd). NaN stays NaN (bits
    kept) when ``mantissa_bits > 0`` and becomes +inf otherwise.
    """
    for i in prange(x.size):
        v = x[i]
        if v != v:
            if mantissa_bits > 0:
                out[i] = v
            else:
                out[i] = np.inf
            continue
        a = abs(np.float64(v))
        if round_mantissa and a != 0.0 and a != np.inf:
            e = math.frexp(a)[1] - 1  # 2**e <= a < 2**(e+1)
            k = max(e, min_exponent) - mantissa_bits
            s = math.ldexp(a, -k)
            r = np.rint(s)
            if mantissa_bits == 0 and s == 1.5 and e >= min_exponent and (e & 1) == 1:
                r = 1.0  # a tie between 2**e and 2**(e+1): the even *biased* exponent
            a = math.ldexp(r, k)
        if clamp:
            if a < smallest_normal:
                a = 0.0
            elif a >= overflow:
                a = np.inf
        out[i] = math.copysign(a, v)
