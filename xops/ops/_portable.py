"""Elementary functions whose results do not depend on the CPU's vector ISA.

NumPy dispatches some functions to SIMD loops chosen at run time (SSE, AVX2, AVX-512)
that differ from its scalar loops in the last bit, and which one runs depends on the CPU
and on the operand's length and layout. Where the spec allows an exact answer, xops
computes it here from such a result by a deterministic correction, so every CPU gives the
same bits (docs/semantics.md, "Accuracy of transcendental ops").
"""

import numpy as np

__all__ = ["cbrt"]

_start_cbrt = np.cbrt  # the ISA-dependent start (a hook: tests perturb it by a few ulps)
_SPLIT = 134217729.0  # 2**27 + 1 (Veltkamp's splitting constant for float64)


def _two_product(a, b):
    """(p, e) with p = fl(a*b) and p + e = a*b exactly (Dekker; no FMA needed)."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _cube_residual(y, a):
    """y**3 - a, accurate to ~2**-100 relative to a (y**3 as a double-double; the
    subtraction of the leading terms is exact by Sterbenz's lemma as y**3 ~ a)."""
    s, s_lo = _two_product(y, y)
    c, c_lo = _two_product(s, y)
    return ((c - a) + c_lo) + s_lo * y


def cbrt(v):
    """Cube root of a real float array (float32 or float64), the same bits on every CPU
    and exact wherever the root is representable (perfect cubes).

    The operand is scaled by 2**(3k) into [1, 8) (exact); NumPy's cbrt (a few ulps off,
    differently on different CPUs) and one Newton step (residual in double-double
    arithmetic) give a start within about an ulp, and of the five float64 values around
    it the one whose cube is nearest the scaled operand is taken: whatever the start's
    last bits, that window holds both neighbours of the true root, so the choice is the
    same on every CPU, and an exact root has residual 0. float32 operands are rooted in
    float64 and rounded once.
    """
    v = np.asarray(v)
    out_dtype = v.dtype
    x = v.astype(np.float64)
    a = np.abs(x)
    finite = np.isfinite(a) & (a != 0)
    res = np.array(np.cbrt(x))  # zeros, infinities and NaN: exact already (0-d: an array)
    if not finite.any():
        return res.astype(out_dtype, copy=False)
    af = a[finite]
    m, e = np.frexp(af)  # af = m * 2**e, m in [0.5, 1)
    e = e - 1  # af = (2m) * 2**e, 2m in [1, 2)
    k = np.floor_divide(e, 3)
    scaled = np.ldexp(2 * m, e - 3 * k)  # in [1, 8): exact
    y0 = _start_cbrt(scaled)
    # one Newton step from the (ISA-dependent, a few ulps off) start: within about an
    # ulp of the root whatever the start's last bits were
    y0 = y0 - _cube_residual(y0, scaled) / (3.0 * y0 * y0)
    cands = [y0]
    up = down = y0
    for _ in range(2):
        up = np.nextafter(up, np.inf)
        down = np.nextafter(down, 0.0)
        cands += [up, down]
    cands = np.stack(cands)  # (5, n)
    cands.sort(axis=0)  # ties below break towards the smaller candidate, always
    r = np.abs(_cube_residual(cands, scaled[None, :]))
    best = cands[np.argmin(r, axis=0), np.arange(cands.shape[1])]
    res[finite] = np.copysign(np.ldexp(best, k), x[finite])
    return res.astype(out_dtype, copy=False)
