"""The testing ops of the StableHLO interpreter tests: ``check.*`` and ``interpreter.*``.

* ``check.expect_eq`` / ``expect_eq_const``: equal types, equal values. Floats compare
  as IEEE numbers (``-0 == +0``) except that NaN equals NaN (the reference interpreter
  compares APFloats; its conformance files never expect NaN from expect_eq).
* ``check.expect_almost_eq`` / ``expect_almost_eq_const``: the reference interpreter's
  ``areApproximatelyEqual`` (stablehlo/reference/Element.cpp): equal values pass; NaN
  matches NaN; an infinity only matches itself; otherwise both values must have the
  same sign and ``|actual - expected| <= tolerance`` (absolute; default **0.0001**, the
  reference's constant; ``tolerance = ...`` overrides it). Complex values compare
  part by part; integer and boolean values must be equal.
* ``check.expect_close``: at most ``max_ulp_difference`` (default 4) and at least
  ``min_ulp_difference`` (default 0) units in the last place apart (the reference's
  ``ULPDifference``: bitwise-equal values and NaN pairs are 0 apart, a non-finite value
  is infinitely far from anything else).
* ``check.expect_serialized_eq``: the reference compares a value against what
  ``interpreter.probe`` wrote to disk; xops keeps probed values in memory per call and
  compares against the ``iter``-th one recorded under ``probe_id``.
* ``interpreter.probe`` records its operand and returns it; ``interpreter.print``
  prints it (``tensor<2xi32> {[0, 1]}``).
* ``stablehlo.custom_call @check.expect_*(...)`` (JAX's test programs) is the op with the
  reference runner's custom-call defaults (ULP in [0, 3], tolerance 0.001);
  ``@check.eq`` returns a true ``tensor<i1>``; ``@shape_assertion`` raises its
  ``error_message`` when its predicate is false; sharding/placement annotations are
  identities (see :data:`CUSTOM_CALL_TARGETS`).
"""

import numpy as np

from ..dtypes import DType
from ..errors import SpecError
from ..tensor import Tensor, tensor
from .exceptions import CheckFailure
from .ir import TensorType
from .literals import constant_tensor
from .values import matches, value_type_str

__all__ = ["CHECK_OPS", "CUSTOM_CALL_TARGETS", "coerce_argument", "DEFAULT_TOLERANCE"]

DEFAULT_TOLERANCE = 0.0001
DEFAULT_MAX_ULP = 4


def coerce_argument(func, i, a, vectorised=False):
    """Argument ``i`` of ``func`` as a value of its declared type (element type only
    when the call runs inside a vectorised body, whose values carry a batch shape)."""
    t = func.arg_types[i]
    if isinstance(t, TensorType) and isinstance(t.elem, DType):
        if not isinstance(a, Tensor):
            try:
                a = tensor(a, t.elem)
            except (TypeError, ValueError) as e:
                raise SpecError(
                    "func.call", "", f"argument #{i} of @{func.name} must be {t}: {e}"
                ) from None
        if not matches(a, t, vectorised):
            raise SpecError(
                "func.call",
                "",
                f"argument #{i} of @{func.name} must be {t}, got {value_type_str(a)}",
            )
    return a


# ---------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------


def _values(t):
    a = np.asarray(t)
    if t.dtype.is_narrow:
        a = a.astype(t.dtype.compute)
    return a


def _index(flat_i, shape):
    return [int(i) for i in np.unravel_index(flat_i, shape)] if shape else []


def _fmt(x):
    if isinstance(x, (complex, np.complexfloating)):
        return f"({_fmt(x.real)}, {_fmt(x.imag)})"
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    return str(x.item() if hasattr(x, "item") else x)


def _same_type(op, actual, expected):
    if not isinstance(actual, Tensor):
        raise CheckFailure(f"{op}: expected a tensor, got {value_type_str(actual)}")
    if actual.dtype is not expected.dtype or actual.shape != expected.shape:
        raise CheckFailure(
            f"{op}: types differ: {value_type_str(actual)} (actual) vs "
            f"{value_type_str(expected)} (expected)"
        )


def _first_mismatch(op, ok, a, b, extra=""):
    bad = np.flatnonzero(~ok.reshape(-1))
    if bad.size:
        i = int(bad[0])
        idx = _index(i, a.shape)
        raise CheckFailure(
            f"{op}: {bad.size} of {a.size} element(s) differ{extra}; first "
            f"at index {idx}: {_fmt(a.reshape(-1)[i])} (actual) vs "
            f"{_fmt(b.reshape(-1)[i])} (expected)"
        )


def expect_eq(op, actual, expected):
    _same_type(op, actual, expected)
    a, b = _values(actual), _values(expected)
    if a.dtype.kind in "fc":
        ok = (a == b) | (np.isnan(a) & np.isnan(b))
        if a.dtype.kind == "c":
            ok = ((a.real == b.real) | (np.isnan(a.real) & np.isnan(b.real))) & (
                (a.imag == b.imag) | (np.isnan(a.imag) & np.isnan(b.imag))
            )
    else:
        ok = a == b
    _first_mismatch(op, np.asarray(ok), a, b)


def _almost(a, b, tol):
    """Element-wise areApproximatelyEqual of real arrays (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        eq = a == b
        both_nan = np.isnan(a) & np.isnan(b)
        finite = np.isfinite(a) & np.isfinite(b)
        same_sign = np.signbit(a) == np.signbit(b)
        close = np.abs(a - b) <= tol
    return eq | both_nan | (finite & same_sign & close)


def expect_almost_eq(op, actual, expected, tolerance=None):
    _same_type(op, actual, expected)
    tol = DEFAULT_TOLERANCE if tolerance is None else float(tolerance)
    a, b = _values(actual), _values(expected)
    if a.dtype.kind == "c":
        ok = _almost(a.real.astype(np.float64), b.real.astype(np.float64), tol) & _almost(
            a.imag.astype(np.float64), b.imag.astype(np.float64), tol
        )
    elif a.dtype.kind == "f":
        ok = _almost(a.astype(np.float64), b.astype(np.float64), tol)
    else:
        ok = a == b
    _first_mismatch(op, np.asarray(ok), a, b, f" (tolerance {tol:g})")


def _ulp_diff(actual, expected):
    """ULP distances (uint64, saturating to max for non-finite mismatches)."""
    dt = actual.dtype
    width = dt.np.itemsize
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    ab = np.ascontiguousarray(np.asarray(actual)).view(u).astype(np.uint64)
    bb = np.ascontiguousarray(np.asarray(expected)).view(u).astype(np.uint64)
    bits = dt.bits if dt.bits <= 64 else 64
    sign = np.uint64(1) << np.uint64(bits - 1)
    mag = sign - np.uint64(1)
    a_neg, b_neg = (ab & sign) != 0, (bb & sign) != 0
    am, bm = ab & mag, bb & mag
    va, vb = _values(actual), _values(expected)
    fa, fb = np.isfinite(va), np.isfinite(vb)
    with np.errstate(over="ignore"):
        same = np.where(am > bm, am - bm, bm - am)
        opp = am + bm
    d = np.where(a_neg != b_neg, opp, same)
    out = np.where(
        ab == bb,
        np.uint64(0),
        np.where(
            fa & fb, d, np.where(np.isnan(va) & np.isnan(vb), np.uint64(0), np.uint64(2**64 - 1))
        ),
    )
    return out


def expect_close(op, actual, expected, max_ulp=None, min_ulp=None):
    _same_type(op, actual, expected)
    hi = DEFAULT_MAX_ULP if max_ulp is None else int(max_ulp)
    lo = 0 if min_ulp is None else int(min_ulp)
    dt = actual.dtype
    if dt.kind == "complex":
        part = "f32" if dt.np == np.complex64 else "f64"
        a, b = np.asarray(actual), np.asarray(expected)
        d = np.maximum(
            _ulp_diff(tensor(a.real, part), tensor(b.real, part)),
            _ulp_diff(tensor(a.imag, part), tensor(b.imag, part)),
        )
    elif dt.kind == "float":
        d = _ulp_diff(actual, expected)
    else:
        raise CheckFailure(f"{op}: needs floating-point or complex values, got {dt.name}")
    ok = (d <= np.uint64(hi)) & (d >= np.uint64(lo))
    _first_mismatch(
        op, ok, _values(actual), _values(expected), f" (ULP difference must be in [{lo}, {hi}])"
    )


# ---------------------------------------------------------------------------------------
# Handlers (registered into xops.stablehlo.handlers.OPS)
# ---------------------------------------------------------------------------------------


def _const(ctx, op):
    v = op.attrs.get("value")
    if v is None:
        raise SpecError(op.name, "", "needs a dense literal")
    t = v.type if v.type is not None else (op.operand_types or [None])[0]
    return constant_tensor(v, t)


def _h_eq(ctx, op, args):
    expect_eq(op.name, args[0], args[1])


def _h_eq_const(ctx, op, args):
    expect_eq(op.name, args[0], _const(ctx, op))


def _h_almost(ctx, op, args):
    expect_almost_eq(op.name, args[0], args[1], op.attrs.get("tolerance"))


def _h_almost_const(ctx, op, args):
    expect_almost_eq(op.name, args[0], _const(ctx, op), op.attrs.get("tolerance"))


def _h_close(ctx, op, args):
    expect_close(
        op.name,
        args[0],
        args[1],
        op.attrs.get("max_ulp_difference"),
        op.attrs.get("min_ulp_difference"),
    )


def _h_serialized(ctx, op, args):
    pid = op.attrs.get("probe_id")
    it = int(op.attrs.get("iter", 0))
    got = ctx.interp.probes.get(pid, [])
    if it >= len(got):
        raise CheckFailure(
            f"{op.name}: no value probed as {pid!r} at iteration {it} ({len(got)} recorded)"
        )
    expect_eq(op.name, got[it], args[0])


def _h_probe(ctx, op, args):
    pid = op.attrs.get("probe_id")
    ctx.interp.probes.setdefault(pid, []).append(args[0])
    return args[0]


def _h_print(ctx, op, args):
    import sys

    v = args[0]
    if isinstance(v, Tensor):
        a = _values(v)
        body = np.array2string(a, separator=", ", threshold=10**6)
        text = f"{value_type_str(v)} {{\n  {body}\n}}"
    else:
        text = value_type_str(v)
    ctx.interp.printed.append(text)
    print(text, file=ctx.interp.trace_file or sys.stdout)


CHECK_OPS = {
    "check.expect_eq": _h_eq,
    "check.expect_eq_const": _h_eq_const,
    "check.expect_almost_eq": _h_almost,
    "check.expect_almost_eq_const": _h_almost_const,
    "check.expect_close": _h_close,
    "check.expect_serialized_eq": _h_serialized,
    "check.eq": _h_eq_const,  # the older spelling
    "check.almost_eq": _h_almost_const,
    "interpreter.probe": _h_probe,
    "interpreter.print": _h_print,
}


# ---------------------------------------------------------------------------------------
# custom_call targets (what JAX's test programs and exported functions use)
# ---------------------------------------------------------------------------------------
# The reference runner (stablehlo-translate --interpret) gives the custom-call forms of
# the checks their own defaults: expect_close within [0, 3] ULP, expect_almost_eq within
# 0.001; ``check.eq`` compares integers exactly, other types with expect_almost_eq's
# default tolerance, and returns a true tensor<i1>.
CUSTOM_CALL_MAX_ULP = 3
CUSTOM_CALL_TOLERANCE = 0.001


def _cc_operands(op, args, n):
    if len(args) != n:
        raise SpecError(
            f"custom_call @{op.attrs.get('call_target_name')}",
            "",
            f"takes {n} operands, got {len(args)}",
        )
    return args


def _cc_close(ctx, op, args):
    a, b = _cc_operands(op, args, 2)
    expect_close(
        "check.expect_close",
        a,
        b,
        op.attrs.get("max_ulp_difference", CUSTOM_CALL_MAX_ULP),
        op.attrs.get("min_ulp_difference"),
    )


def _cc_almost(ctx, op, args):
    a, b = _cc_operands(op, args, 2)
    expect_almost_eq(
        "check.expect_almost_eq", a, b, op.attrs.get("tolerance", CUSTOM_CALL_TOLERANCE)
    )


def _cc_eq(ctx, op, args):
    a, b = _cc_operands(op, args, 2)
    expect_eq("check.expect_eq", a, b)


def _cc_check_eq(ctx, op, args):
    a, b = _cc_operands(op, args, 2)
    if b.dtype.kind in ("si", "ui", "bool"):
        expect_eq("check.eq", a, b)
    else:
        expect_almost_eq("check.eq", a, b, op.attrs.get("tolerance"))
    return tensor(True, "i1") if op.results else None


def _shape_assertion(ctx, op, args):
    """JAX's shape_assertion(pred, dims...): fails with its error_message, where
    ``{0}``, ``{1}``... are the dims' values."""
    if not args:
        raise SpecError("custom_call @shape_assertion", "", "needs a predicate operand")
    if not bool(np.all(np.asarray(args[0]))):
        msg = str(op.attrs.get("error_message", "shape assertion failed"))
        vals = [np.asarray(a).tolist() for a in args[1:]]
        try:
            msg = msg.format(*vals)
        except (IndexError, KeyError, ValueError):
            pass
        raise SpecError("custom_call @shape_assertion", "", msg)


def _identity(ctx, op, args):
    """Targets that only annotate a value (sharding, placement) on one device."""
    return args[0] if len(args) == 1 else list(args)


CUSTOM_CALL_TARGETS = {
    "check.expect_close": _cc_close,
    "check.expect_almost_eq": _cc_almost,
    "check.expect_eq": _cc_eq,
    "check.eq": _cc_check_eq,
    "shape_assertion": _shape_assertion,
    "Sharding": _identity,
    "SPMDFullToShardShape": _identity,
    "SPMDShardToFullShape": _identity,
    "annotate_device_placement": _identity,
    "MoveToHost": _identity,
    "MoveToDevice": _identity,
}
