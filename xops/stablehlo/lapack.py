"""LAPACK custom calls of JAX's CPU lowering (``lapack_spotrf_ffi`` and friends).

On CPU, ``jax.jit(f).lower(...)`` turns ``jnp.linalg``/``lax.linalg`` into
``stablehlo.custom_call @lapack_<t><routine>_ffi`` (``t`` = s, d, c, z) with the
routine's options in ``mhlo.backend_config`` (ASCII codes: ``uplo = 76`` is 'L') and the
leading ``num_batch_dims`` dimensions as a batch. jaxlib runs the LAPACK routine on each
matrix; so does xops, through SciPy's LAPACK (the library jaxlib itself calls), so the
results are LAPACK's own: packed factors, 1-based pivots, Householder scalars, ``info``.

Routines: potrf (Cholesky), getrf (LU with partial pivoting), geqrf (QR, Householder
form), orgqr/ungqr (Q from it), trsm (triangular solve), syevd/heevd (symmetric or
Hermitian eigendecomposition), gesdd (SVD), geev (general eigendecomposition), gees
(Schur form, unsorted), gehrd (Hessenberg form), sytrd/hetrd (tridiagonal form), gtsv
(tridiagonal solve).
These run on values only: gradients do not flow through them (JAX's own programs
differentiate through linalg by separate ops, which do).
"""

import numpy as np

from ..errors import SpecError
from ..tensor import tensor
from .ir import TensorType

__all__ = ["LAPACK_TARGETS"]

_PREFIX = {
    np.dtype(np.float32): "s",
    np.dtype(np.float64): "d",
    np.dtype(np.complex64): "c",
    np.dtype(np.complex128): "z",
}


def _routine(name, a):
    from scipy.linalg import blas, lapack  # imported on first use

    p = _PREFIX.get(np.dtype(a.dtype))
    if p is None:
        raise SpecError(
            "custom_call @lapack", "", f"LAPACK needs f32, f64, c64 or c128 matrices, got {a.dtype}"
        )
    module = blas if name == "trsm" else lapack
    return getattr(module, p + name)


def _char(cfg, key, default):
    v = cfg.get(key, default)
    return chr(int(v)) if not isinstance(v, str) else v


class _Call:
    """One custom call: its operands as arrays, batch size, options, result types."""

    def __init__(self, op, args):
        self.op = op
        self.target = str(op.attrs.get("call_target_name"))
        cfg = op.attrs.get("mhlo.backend_config")
        self.cfg = cfg if isinstance(cfg, dict) else {}
        fa = op.attrs.get("mhlo.frontend_attributes")
        nb = fa.get("num_batch_dims") if isinstance(fa, dict) else None
        self.arrays = [np.asarray(a) for a in args]
        self.nb = int(nb) if nb is not None else self.arrays[0].ndim - 2
        self.batch = self.arrays[0].shape[: self.nb]

    def run(self, fn):
        """fn(*matrices) -> tuple of arrays per batch position; stacked, cast to the
        declared result types."""
        per = []
        for idx in np.ndindex(*self.batch):
            per.append(fn(*[a[idx] for a in self.arrays]))
        types = self.op.result_types
        outs = []
        for i, t in enumerate(types):
            if not isinstance(t, TensorType) or not t.is_static:
                raise SpecError(
                    f"custom_call @{self.target}",
                    "",
                    f"result #{i} needs a static tensor type, got {t}",
                )
            shape = tuple(t.shape)
            parts = [np.asarray(p[i]) for p in per]
            if any(p.size * len(parts) != int(np.prod(shape)) for p in parts):
                raise SpecError(
                    f"custom_call @{self.target}",
                    "",
                    f"result #{i} is declared {t}, LAPACK gave "
                    f"{[list(p.shape) for p in parts[:1]]} per matrix",
                )
            arr = np.stack(parts).reshape(shape) if parts else np.zeros(shape)
            outs.append(tensor(arr.astype(t.elem.np, copy=False), t.elem))
        return outs[0] if len(outs) == 1 else outs


def _info(info):
    return np.int32(info)


def _potrf(ctx, op, args):
    c = _Call(op, args)
    lower = _char(c.cfg, "uplo", "L") == "L"

    def one(a):
        f, info = _routine("potrf", a)(a, lower=lower, clean=0)
        return f, _info(info)

    return c.run(one)


def _getrf(ctx, op, args):
    c = _Call(op, args)

    def one(a):
        lu, piv, info = _routine("getrf", a)(a)
        return lu, (piv + 1).astype(np.int32), _info(info)  # LAPACK's pivots are 1-based

    return c.run(one)


def _geqrf(ctx, op, args):
    c = _Call(op, args)

    def one(a):
        qr, tau, _, _ = _routine("geqrf", a)(a)
        return qr, tau

    return c.run(one)


def _orgqr(ctx, op, args):
    c = _Call(op, args)

    def one(a, tau):
        name = "ungqr" if np.iscomplexobj(a) else "orgqr"
        if a.shape[1] == 0:
            return (a,)
        q, _, _ = _routine(name, a)(a, tau)
        return (q,)

    return c.run(one)


def _trsm(ctx, op, args):
    c = _Call(op, args)
    side = _char(c.cfg, "side", "L")
    lower = _char(c.cfg, "uplo", "L") == "L"
    trans = {"N": 0, "T": 1, "C": 2}[_char(c.cfg, "trans_x", "N")]
    unit = _char(c.cfg, "diag", "N") == "U"

    def one(a, b):
        x = _routine("trsm", a)(
            1.0, a, b, side=int(side == "R"), lower=int(lower), trans_a=trans, diag=int(unit)
        )
        return (x,)

    return c.run(one)


def _syevd(ctx, op, args):
    c = _Call(op, args)
    vectors = _char(c.cfg, "mode", "V") == "V"
    lower = _char(c.cfg, "uplo", "L") == "L"

    def one(a):
        name = "heevd" if np.iscomplexobj(a) else "syevd"
        w, v, info = _routine(name, a)(a, compute_v=int(vectors), lower=int(lower))
        return v, w, _info(info)

    return c.run(one)


def _gesdd(ctx, op, args):
    c = _Call(op, args)
    mode = _char(c.cfg, "mode", "A")
    shapes = [tuple(t.shape[c.nb :]) for t in op.result_types]

    def one(a):
        uv = mode != "N"
        u, s, vt, info = _routine("gesdd", a)(a, compute_uv=int(uv), full_matrices=int(mode == "A"))
        if not uv:  # the declared u / vt are placeholders
            u, vt = np.zeros(shapes[2], a.dtype), np.zeros(shapes[3], a.dtype)
        return a, s, u, vt, _info(info)

    return c.run(one)


def _geev(ctx, op, args):
    c = _Call(op, args)
    left = _char(c.cfg, "compute_left", "N") == "V"
    right = _char(c.cfg, "compute_right", "V") == "V"

    shapes = [tuple(t.shape[c.nb :]) for t in op.result_types]

    def one(a):
        out = _routine("geev", a)(a, compute_vl=int(left), compute_vr=int(right))
        vecs = out[-3:-1]
        # vectors not asked for are placeholders of the declared shape
        vl = vecs[0] if left else np.zeros(shapes[-3], vecs[0].dtype)
        vr = vecs[1] if right else np.zeros(shapes[-2], vecs[1].dtype)
        return (*out[:-3], vl, vr, _info(out[-1]))

    return c.run(one)


def _gtsv(ctx, op, args):
    """Tridiagonal solve: dl[0] and du[-1] are unused (JAX's convention)."""
    c = _Call(op, args)

    def one(dl, d, du, b):
        _, d2, du2, x, info = _routine("gtsv", d)(dl[1:], d, du[:-1], b)
        return dl, d2, np.concatenate([du2, du[-1:]]), x, _info(info)

    return c.run(one)


def _sytrd(ctx, op, args):
    """Reduction to tridiagonal form: (packed a, diagonal, off-diagonal, tau, info)."""
    c = _Call(op, args)
    lower = _char(c.cfg, "uplo", "L") == "L"

    def one(a):
        name = "hetrd" if np.iscomplexobj(a) else "sytrd"
        out, d, e, tau, info = _routine(name, a)(a, lower=int(lower))
        return out, d, e, tau, _info(info)

    return c.run(one)


def _gehrd(ctx, op, args):
    """Reduction to Hessenberg form; ``low``/``high`` are LAPACK's 1-based ilo/ihi."""
    c = _Call(op, args)
    low, high = int(c.cfg.get("low", 1)), c.cfg.get("high")

    def one(a):
        hi = a.shape[0] if high is None else int(high)
        out, tau, info = _routine("gehrd", a)(a, lo=low - 1, hi=hi - 1)
        return out, tau[: max(a.shape[0] - 1, 0)], _info(info)

    return c.run(one)


def _gees(ctx, op, args):
    """Schur decomposition (no sorting): real (t, vs, wr, wi, sdim, info), complex
    (t, vs, w, sdim, info)."""
    c = _Call(op, args)
    vectors = _char(c.cfg, "mode", "V") == "V"
    if _char(c.cfg, "sort", "N") != "N":
        raise SpecError(f"custom_call @{c.target}", "", "sorted Schur forms are not supported")
    shapes = [tuple(t.shape[c.nb :]) for t in op.result_types]

    def one(a):
        out = _routine("gees", a)(lambda *v: 0, a, compute_v=int(vectors), sort_t=0)
        if np.iscomplexobj(a):
            t, sdim, w, vs, _, info = out
            eig = (w,)
        else:
            t, sdim, wr, wi, vs, _, info = out
            eig = (wr, wi)
        if not vectors:
            vs = np.zeros(shapes[1], a.dtype)
        return (t, vs, *eig, np.int32(sdim), _info(info))

    return c.run(one)


LAPACK_TARGETS = {}
for _p in "sdcz":
    for _name, _h in (
        ("potrf", _potrf),
        ("getrf", _getrf),
        ("geqrf", _geqrf),
        ("trsm", _trsm),
        ("gesdd", _gesdd),
        ("geev", _geev),
        ("gtsv", _gtsv),
        ("gehrd", _gehrd),
        ("gees", _gees),
    ):
        LAPACK_TARGETS[f"lapack_{_p}{_name}_ffi"] = _h
LAPACK_TARGETS.update(
    {
        "lapack_sorgqr_ffi": _orgqr,
        "lapack_dorgqr_ffi": _orgqr,
        "lapack_cungqr_ffi": _orgqr,
        "lapack_zungqr_ffi": _orgqr,
        "lapack_ssyevd_ffi": _syevd,
        "lapack_dsyevd_ffi": _syevd,
        "lapack_cheevd_ffi": _syevd,
        "lapack_zheevd_ffi": _syevd,
        "lapack_ssytrd_ffi": _sytrd,
        "lapack_dsytrd_ffi": _sytrd,
        "lapack_chetrd_ffi": _sytrd,
        "lapack_zhetrd_ffi": _sytrd,
    }
)
