"""CHLO ops of the conformance files, run as the StableHLO ops they legalize to.

The interpreter tests under ``chlo/`` first run ``stablehlo-opt
--chlo-legalize-to-stablehlo``; here each op is decomposed into public ``xo.*`` calls
the same way (so they differentiate like any other program):

* ``chlo.mulhi``: the high half of the double-width product. Up to 32 bits: widen,
  multiply, shift, narrow. 64 bits: four 32x32 -> 64 partial products (unsigned), with
  the usual correction for signed operands.
* ``chlo.scan``: the body runs once per position along ``dimension`` (backwards when
  ``is_reverse``), carrying its ``inits``; per-position outputs are stacked.
* ``chlo.ragged_dot`` (ragged non-contracting lhs dimension, "mode 1"): one
  ``dot_general`` per group, each masked to that group's rows, summed.
* ``chlo.square`` is ``multiply(x, x)``; ``chlo.top_k``, ``chlo.erf`` and ``chlo.tan``
  are ``xo.top_k``, ``xo.erf`` and ``xo.tan``.
"""

import numpy as np

import xops as xo
from ..errors import SpecError
from .ir import StructAttr
from .table import register

__all__ = ["CHLO_OPS"]


def _full(value, like):
    """A tensor of ``like``'s type filled with ``value``."""
    return xo.broadcast_in_dim(xo.constant(value, like.dtype), [], list(like.shape))


_WIDER = {
    ("si", 2): "i8",
    ("si", 4): "i8",
    ("si", 8): "i16",
    ("si", 16): "i32",
    ("si", 32): "i64",
    ("ui", 2): "ui8",
    ("ui", 4): "ui8",
    ("ui", 8): "ui16",
    ("ui", 16): "ui32",
    ("ui", 32): "ui64",
}


def mulhi(lhs, rhs):
    dt = lhs.dtype
    if dt.kind not in ("si", "ui"):
        raise SpecError("chlo.mulhi", "", f"operands must be integers, got {dt.name}")
    if dt.bits < 64:
        wide = _WIDER[(dt.kind, dt.bits)]
        p = xo.multiply(xo.convert(lhs, wide), xo.convert(rhs, wide))
        shift = xo.shift_right_arithmetic if dt.kind == "si" else xo.shift_right_logical
        return xo.convert(shift(p, _full(dt.bits, p)), dt)
    u = "ui64"
    a = lhs if dt.kind == "ui" else xo.bitcast_convert(lhs, u)
    b = rhs if dt.kind == "ui" else xo.bitcast_convert(rhs, u)
    k32, mask = _full(32, a), _full(0xFFFFFFFF, a)
    a_lo, a_hi = xo.and_(a, mask), xo.shift_right_logical(a, k32)
    b_lo, b_hi = xo.and_(b, mask), xo.shift_right_logical(b, k32)
    lo_lo, hi_lo = xo.multiply(a_lo, b_lo), xo.multiply(a_hi, b_lo)
    lo_hi, hi_hi = xo.multiply(a_lo, b_hi), xo.multiply(a_hi, b_hi)
    cross = xo.add(xo.add(xo.shift_right_logical(lo_lo, k32), xo.and_(hi_lo, mask)), lo_hi)
    hi = xo.add(
        xo.add(hi_hi, xo.shift_right_logical(hi_lo, k32)), xo.shift_right_logical(cross, k32)
    )
    if dt.kind == "ui":
        return hi
    # signed: hi(a*b) = hi_u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)  (mod 2**64)
    zero = _full(0, lhs)
    zu = _full(0, a)
    hi = xo.subtract(hi, xo.select(xo.compare(lhs, zero, "LT"), b, zu))
    hi = xo.subtract(hi, xo.select(xo.compare(rhs, zero, "LT"), a, zu))
    return xo.bitcast_convert(hi, dt)


def _mulhi(ctx, op, args):
    return mulhi(args[0], args[1])


def _take(x, dim, i):
    """x[..., i, ...] along ``dim`` with that dim removed."""
    start = [0] * x.ndim
    limit = list(x.shape)
    start[dim], limit[dim] = i, i + 1
    s = xo.slice(x, start, limit, [1] * x.ndim)
    return xo.reshape(s, [d for k, d in enumerate(x.shape) if k != dim])


def _stack(parts, dim):
    expanded = []
    for p in parts:
        shape = list(p.shape)
        shape.insert(dim, 1)
        expanded.append(xo.reshape(p, shape))
    return xo.concatenate(expanded, dim)


def _scan(ctx, op, args):
    seg = op.attrs.get("operandSegmentSizes") or [
        len(args) - len(op.results) // 2,
        len(op.results) // 2,
    ]
    n_in, n_init = int(seg[0]), int(seg[1])
    inputs, carry = list(args[:n_in]), list(args[n_in : n_in + n_init])
    dim = int(op.attrs.get("dimension", 0))
    reverse = bool(op.attrs.get("is_reverse", False))
    n_out = len(op.results) - n_init
    if not inputs:
        raise SpecError(op.name, "", "needs at least one input")
    length = inputs[0].shape[dim]
    body = ctx.region(0)
    outs = [[None] * length for _ in range(n_out)]
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        res = body(*[_take(x, dim, i) for x in inputs], *carry)
        res = list(res) if isinstance(res, tuple) else [res]
        for k in range(n_out):
            outs[k][i] = res[k]
        carry = res[n_out:]
    if length == 0:
        raise SpecError(op.name, "", "scanning an empty dimension is not supported")
    return [_stack(o, dim) for o in outs] + carry


def _ragged_dot(ctx, op, args):
    lhs, rhs, group_sizes = args
    dn = op.attrs.get("ragged_dot_dimension_numbers")
    f = dn.fields if isinstance(dn, StructAttr) else {}

    def lst(name):
        return [int(v) for v in f.get(name, [])]

    lb, rb = lst("lhs_batching_dimensions"), lst("rhs_batching_dimensions")
    lc, rc = lst("lhs_contracting_dimensions"), lst("rhs_contracting_dimensions")
    ragged, group = lst("lhs_ragged_dimensions"), lst("rhs_group_dimensions")
    if len(ragged) != 1 or len(group) != 1 or ragged[0] in lc or ragged[0] in lb:
        raise SpecError(
            op.name,
            "",
            "only a ragged non-contracting lhs dimension with a "
            "rhs group dimension (mode 1) is supported",
        )
    rd, gd = ragged[0], group[0]
    sizes = np.asarray(group_sizes).reshape(-1).astype(np.int64)
    if sizes.size != rhs.shape[gd]:
        raise SpecError(
            op.name, "", f"group_sizes has {sizes.size} entries for {rhs.shape[gd]} groups"
        )

    # rhs dims after removing the group dim
    def shift(d):
        return d - 1 if d > gd else d

    rb2, rc2 = [shift(d) for d in rb], [shift(d) for d in rc]
    lhs_free = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    ragged_pos = len(lb) + lhs_free.index(rd)  # the ragged dim's place in the result
    out_type = ctx.result_dtype()
    total = None
    start = 0
    for g, size in enumerate(sizes.tolist()):
        part = xo.dot_general(
            lhs,
            _take(rhs, gd, g),
            lb,
            rb2,
            lc,
            rc2,
            preferred_element_type=out_type if out_type is not lhs.dtype else None,
        )
        iota = xo.iota(ragged_pos, list(part.shape), "i64")
        inside = xo.and_(
            xo.compare(iota, _full(start, iota), "GE"),
            xo.compare(iota, _full(start + size, iota), "LT"),
        )
        part = xo.select(inside, part, _full(0, part))
        total = part if total is None else xo.add(total, part)
        start += size
    return total


def _square(ctx, op, args):
    return xo.multiply(args[0], args[0])


def _top_k(ctx, op, args):
    return list(xo.top_k(args[0], int(op.attrs.get("k"))))


CHLO_OPS = {
    "chlo.square": (_square, ["multiply"]),
    "chlo.top_k": (_top_k, ["top_k"]),
    "chlo.mulhi": (_mulhi, ["multiply", "convert", "shift_right_logical"]),
    "chlo.scan": (_scan, ["slice", "reshape", "concatenate"]),
    "chlo.ragged_dot": (_ragged_dot, ["dot_general", "select"]),
}

from .chlo_math import CHLO_MATH_OPS  # noqa: E402  (elementwise math, broadcast_<op>)

CHLO_OPS.update(CHLO_MATH_OPS)

for _name, (_h, _needs) in CHLO_OPS.items():  # into the executor's table (.table)
    register(_name, _h, _needs)
