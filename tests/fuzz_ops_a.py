"""Fuzz generators, part 1: elementwise, data movement, conversion, tuples/tokens,
quantization. Each ``g_<op>(d)`` draws one valid call as a :class:`fuzz_core.Case`
whose reference is recomputed from the (possibly mutated) parameter values and rejects
what the spec rejects. References come from the existing tests where they exist
(test_elementwise's records, test_movement's spec-shaped loops, test_conversion's
conversion table, test_quantization's quantize/dequantize)."""

import math

import ml_dtypes
import numpy as np
import test_elementwise as TE
import test_movement as TM
from fuzz_core import (
    ALL,
    DT,
    Case,
    P,
    Reject,
    agree,
    dtype_of,
    expect,
    from_f64,
    holder,
    reject_unless,
)
from test_conversion import _assert_float_bits as convert_float_bits
from test_conversion import _expected as convert_expected
from test_dtypes import FORMATS, assert_format_bits
from test_quantization import ref_dequantize, ref_quantize

import xops as xo

GEN = {}


def gen(name):
    def deco(f):
        GEN[name] = f
        return f

    return deco


def same_types(vals):
    dts = [dtype_of(v) for v in vals]
    reject_unless(all(d == dts[0] for d in dts), "element types differ")
    return dts[0]


def is_int_list(v, n=None):
    ok = isinstance(v, (list, tuple)) and all(
        isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in v
    )
    return ok and (n is None or len(v) == n)


def ints(v, n=None, lo=None):
    """A valid int-list attribute or Reject."""
    reject_unless(is_int_list(v, n), f"not a list of {n} ints: {v!r}")
    out = [int(x) for x in v]
    reject_unless(lo is None or all(x >= lo for x in out), "negative")
    return out


def an_int(v, lo=None, hi=None):
    reject_unless(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)), "not an int"
    )
    v = int(v)
    reject_unless((lo is None or v >= lo) and (hi is None or v <= hi), "out of range")
    return v


# ---------------------------------------------------------------------------------------
# Elementwise: the records of tests/test_elementwise.py
# ---------------------------------------------------------------------------------------


def _elementwise_cmp(rec):
    def cmp(out, want, values):
        if want[0] == "quant":
            _, qt, w = want
            assert out.dtype == qt, f"{out.dtype.name} != {qt.name}"
            g = np.asarray(out).astype(np.int64)
            assert g.shape == w.shape and np.all(np.abs(g - w) <= 1), (
                f"storage {g.reshape(-1)[:8].tolist()} != {w.reshape(-1)[:8].tolist()}"
            )
            return
        dt, args = want
        w = TE.reference(rec, dt, args)
        rdt = rec.result(dt)
        if dt.kind == "complex" and rec.rtol is not None:
            if rdt.kind == "float":
                return TE.assert_ulps(out, w, rdt, 2, args)
            return TE.assert_complex_close(
                out, w, rdt, rec.rtol * (1e-9 if dt.name == "c128" else 1), args
            )
        if dt.kind == "float" and rec.ulps:
            ulps = 1 if dt.bits <= 16 else 2 if dt.name == "f64" else rec.ulps
            return TE.assert_ulps(out, w, rdt, ulps, args)
        TE.assert_bitexact(out, w, rdt, args)

    return cmp


def quantize_ref(x, qt, i=0):
    """test_quantization's ref_quantize, with the non-finite values it leaves out:
    convert saturates (+-inf -> the storage bounds) and maps NaN to 0 (+ zero point)."""
    if math.isnan(x):
        return min(max(qt.zero_points[i], qt.storage_min), qt.storage_max)
    big = float(ml_dtypes.finfo(qt.expressed_type.np).max)
    if math.isinf(x) or abs(x / qt.scales[i]) > big:  # x / scale overflows: saturates
        return qt.storage_max if x > 0 else qt.storage_min
    try:
        return ref_quantize(x, qt, i)
    except OverflowError:  # x / scale rounds up to inf in the expressed type: saturates
        return qt.storage_max if x > 0 else qt.storage_min


def _quantized_elementwise(rec, vals):
    """dequantize_op_quantize(op, *vals, type(vals[0])) for per-tensor quantized operands
    (C1: every operand quantized): the float op on the f32-rounded real values, then
    quantize; as the quantized storage the expected result (compared within 1)."""
    reject_unless(F in rec.kinds and rec.result(DT["f32"]) == DT["f32"])
    hs = [holder(x) for x in vals]
    reject_unless(all(h.shape == hs[0].shape for h in hs))
    qts = [dtype_of(x) for x in vals]
    reject_unless(
        all(
            q.kind == "quant" and q.quantization_dimension is None and q.expressed_type == DT["f32"]
            for q in qts
        ),
        "quantized types",
    )
    real = [
        np.vectorize(lambda t, q=q: float(ref_dequantize(int(t), q)), otypes=[np.float64])(
            h.astype(np.int64)
        )
        if h.size
        else np.zeros(h.shape)
        for h, q in zip(hs, qts)
    ]
    out = np.asarray(
        rec.ref_float(*[r.astype(np.float32).astype(np.float64) for r in real]), np.float64
    ).astype(np.float32)
    w = (
        np.vectorize(lambda t: quantize_ref(float(t), qts[0]), otypes=[np.int64])(out)
        if out.size
        else np.zeros(out.shape, np.int64)
    )
    return "quant", qts[0], w


F = "float"


def _record_gen(rec):
    names = ["operand"] if rec.arity == 1 else ["lhs", "rhs"]

    def g(d):
        dt = d.dtype(TE.accepted(rec), kernel=False)  # (kernels: int64/uint64, f32/f64 only)
        shape = d.shape()
        args = TE.make_operands(rec, dt, d.rng, shape)
        params = [P(n, d.wrap(a, dt), "tensor") for n, a in zip(names, args)]

        def ref(v):
            vals = [v[n] for n in names]
            if any(dtype_of(x).kind == "quant" for x in vals):
                return _quantized_elementwise(rec, vals)
            dt = same_types(vals)
            reject_unless(dt.kind in rec.kinds, "element type not accepted")
            hs = [holder(x) for x in vals]
            reject_unless(all(h.shape == hs[0].shape for h in hs), "shapes differ")
            return dt, hs

        return Case(rec.name, params, ref, _elementwise_cmp(rec))

    return g


for _rec in TE.RECORDS:
    GEN[_rec.name] = _record_gen(_rec)


@gen("complex")
def g_complex(d):
    dt = d.dtype([DT["f32"], DT["f64"]])
    shape = d.shape()

    def ref(v):
        dt = same_types([v["lhs"], v["rhs"]])
        reject_unless(dt.name in ("f32", "f64"))
        a, b = holder(v["lhs"]), holder(v["rhs"])
        reject_unless(a.shape == b.shape)
        out = np.empty(a.shape, np.complex64 if dt.name == "f32" else np.complex128)
        out.real, out.imag = a, b
        return expect(out, DT["c64" if dt.name == "f32" else "c128"])

    return Case(
        "complex",
        [P("lhs", d.operand(dt, shape), "tensor"), P("rhs", d.operand(dt, shape), "tensor")],
        ref,
    )


CTYPES = {
    "bool": ["UNSIGNED"],
    "si": ["SIGNED"],
    "ui": ["UNSIGNED"],
    "float": ["FLOAT", "TOTALORDER"],
    "complex": ["FLOAT"],
}


@gen("compare")
def g_compare(d):
    dt = d.dtype(ALL, kernel=False)
    shape = d.shape()
    rec = TE.BY_NAME["add"] if dt.kind != "complex" else TE.BY_NAME["maximum"]
    a, b = TE.make_operands(rec, dt, d.rng, shape)
    ctype = d.choice(CTYPES[dt.kind] + [None])

    def ref(v):
        dt = same_types([v["lhs"], v["rhs"]])
        a, b = holder(v["lhs"]), holder(v["rhs"])
        reject_unless(a.shape == b.shape)
        direction, ct = v["comparison_direction"], v["compare_type"]
        reject_unless(direction in TE._NPCMP, "direction")
        reject_unless(ct is None or ct in CTYPES[dt.kind], "compare_type")
        if dt.kind == "quant":
            raise Reject("quantized")
        w = TE.compare_reference(a.reshape(-1), b.reshape(-1), dt, direction, ct or "FLOAT")
        return expect(np.asarray(w).reshape(a.shape), DT["i1"])

    return Case(
        "compare",
        [
            P("lhs", d.wrap(a, dt), "tensor"),
            P("rhs", d.wrap(b, dt), "tensor"),
            P("comparison_direction", d.choice(list(TE._NPCMP)), "enum"),
            P("compare_type", ctype, "enum", none_ok=True),
        ],
        ref,
    )


@gen("select")
def g_select(d):
    dt = d.dtype(ALL, kernel=False)
    shape = d.shape()
    pshape = () if d.coin(0.3) else shape
    pred = d.operand(DT["i1"], pshape)

    def ref(v):
        p, t, f = holder(v["pred"]), holder(v["on_true"]), holder(v["on_false"])
        reject_unless(dtype_of(v["pred"]) == DT["i1"])
        dt = same_types([v["on_true"], v["on_false"]])
        reject_unless(t.shape == f.shape and p.shape in ((), t.shape))
        return expect(np.where(p, t, f), dt)

    return Case(
        "select",
        [
            P("pred", pred, "tensor"),
            P("on_true", d.operand(dt, shape), "tensor"),
            P("on_false", d.operand(dt, shape), "tensor"),
        ],
        ref,
    )


@gen("clamp")
def g_clamp(d):
    dt = d.dtype([x for x in ALL if x.kind != "bool"])
    shape = d.shape()
    rec = TE.BY_NAME["add"] if dt.kind != "complex" else TE.BY_NAME["maximum"]
    x, lo = TE.make_operands(rec, dt, d.rng, shape)
    hi = d.rng.permutation(x.reshape(-1)).reshape(shape) if x.size else x.copy()
    if d.coin(0.3) and x.size:
        lo, hi = lo.reshape(-1)[:1].reshape(()), hi.reshape(-1)[:1].reshape(())

    def ref(v):
        dt = same_types([v["min"], v["operand"], v["max"]])
        lo, x, hi = holder(v["min"]), holder(v["operand"]), holder(v["max"])
        reject_unless(lo.shape in ((), x.shape) and hi.shape in ((), x.shape))
        reject_unless(dt.kind not in ("quant", "bool"))
        w = TE.clamp_reference(
            lo.reshape(-1) if lo.ndim else lo, x.reshape(-1), hi.reshape(-1) if hi.ndim else hi, dt
        )
        return expect(np.asarray(w).reshape(x.shape), dt)

    return Case(
        "clamp",
        [
            P("min", d.wrap(lo, dt), "tensor"),
            P("operand", d.wrap(x, dt), "tensor"),
            P("max", d.wrap(hi, dt), "tensor"),
        ],
        ref,
    )


# ---------------------------------------------------------------------------------------
# Data movement (references: tests/test_movement.py); quantized operands move storage
# ---------------------------------------------------------------------------------------


def _move_dtype(d):
    if d.edge and d.coin(0.15):
        return d.quantized()
    return d.dtype(ALL, kernel=False)


def _operand_param(d, dt, shape, name="operand"):
    return P(name, d.operand(dt, shape), "tensor")


@gen("constant")
def g_constant(d):
    dt = _move_dtype(d)
    shape = d.shape()
    arr = d.values(dt, shape)
    value = xo.tensor(arr, dt) if dt.kind == "quant" or d.coin() else arr

    def ref(v):
        val, want = v["value"], v["dtype"]
        if isinstance(val, (xo.Tensor, np.ndarray)):
            src = dtype_of(val)
            reject_unless(want is None or xo.as_dtype(want) == src, "dtype differs")
            return expect(holder(val), src)
        raise Reject("literal")

    return Case(
        "constant",
        [P("value", value, "tensor"), P("dtype", None if d.coin() else dt, "dtype", none_ok=True)],
        ref,
    )


@gen("iota")
def g_iota(d):
    dt = d.dtype([x for x in ALL if x.kind != "bool"], kernel=False)
    shape = d.shape(lo=1)

    def ref(v):
        shp = ints(v["shape"], lo=0)
        dim = an_int(v["iota_dimension"], 0, len(shp) - 1)
        reject_unless(math.prod(shp) < 10**6)
        dt = xo.as_dtype(v["dtype"]) if v["dtype"] is not None else DT["i64"]
        reject_unless(dt.kind in ("si", "ui", "float", "complex"))
        idx = np.indices(shp, dtype=np.int64)[dim] if shp else np.zeros((), np.int64)
        return expect(from_f64(idx, dt), dt)

    return Case(
        "iota",
        [
            P("iota_dimension", d.int(0, len(shape) - 1), "dim", rank=len(shape)),
            P("shape", list(shape), "shape"),
            P("dtype", dt, "dtype", none_ok=True),
        ],
        ref,
    )


@gen("broadcast_in_dim")
def g_broadcast_in_dim(d):
    dt = _move_dtype(d)
    out_shape = d.shape(lo=0, hi=4)
    r = d.int(0, len(out_shape))
    bd = d.sample(range(len(out_shape)), r)
    if d.coin(0.3):
        bd = list(d.rng.permutation(bd)) if bd else bd
    bd = [int(x) for x in bd]
    shape = tuple(1 if d.coin(0.3) else out_shape[b] for b in bd)

    def ref(v):
        x = holder(v["operand"])
        shp = ints(v["shape"], lo=0)
        bd = ints(v["broadcast_dimensions"], x.ndim)
        reject_unless(len(set(bd)) == len(bd) and all(0 <= b < len(shp) for b in bd))
        reject_unless(all(x.shape[i] in (1, shp[b]) for i, b in enumerate(bd)))
        reject_unless(math.prod(shp) < 10**6)
        return expect(TM.ref_broadcast_in_dim(x, bd, shp), dtype_of(v["operand"]))

    return Case(
        "broadcast_in_dim",
        [
            _operand_param(d, dt, shape),
            P("broadcast_dimensions", bd, "dims", rank=len(out_shape)),
            P("shape", list(out_shape), "shape"),
        ],
        ref,
    )


@gen("broadcast")
def g_broadcast(d):
    dt = _move_dtype(d)

    def ref(v):
        x = holder(v["operand"])
        sizes = ints(v["broadcast_sizes"], lo=0)
        n = math.prod(sizes) * x.size
        reject_unless(n < 10**6)
        if n == 0:  # empty: any sizes (within si64)
            return expect(np.empty((*sizes, *x.shape), x.dtype), dtype_of(v["operand"]))
        return expect(np.broadcast_to(x, (*sizes, *x.shape)), dtype_of(v["operand"]))

    return Case(
        "broadcast",
        [_operand_param(d, dt, d.shape()), P("broadcast_sizes", list(d.shape(hi=2)), "shape")],
        ref,
    )


@gen("reshape")
def g_reshape(d):
    dt = _move_dtype(d)
    shape = d.shape()
    n = math.prod(shape)
    new = [n] if n else [0]
    if n and d.coin():
        f = [k for k in range(1, n + 1) if n % k == 0]
        a = d.choice(f)
        new = [a, n // a]
    elif not n and d.coin():
        new = [2, 0, 3]

    def ref(v):
        x = holder(v["operand"])
        shp = ints(v["shape"], lo=0)
        reject_unless(math.prod(shp) == x.size)
        dims = v["dimensions"]
        if dims is not None:
            dims = ints(dims, x.ndim)
            reject_unless(sorted(dims) == list(range(x.ndim)))
            x = np.transpose(x, dims)
        return expect(np.reshape(x, shp), dtype_of(v["operand"]))

    dims = None if d.coin() else [int(i) for i in d.rng.permutation(len(shape))]
    return Case(
        "reshape",
        [
            _operand_param(d, dt, shape),
            P("shape", new, "shape"),
            P("dimensions", dims, "dims", rank=len(shape), none_ok=True),
        ],
        ref,
    )


@gen("collapse")
def g_collapse(d):
    dt = _move_dtype(d)
    shape = d.shape(lo=1)
    a = d.int(0, len(shape) - 1)
    b = d.int(a, len(shape) - 1)
    dims = list(range(a, b + 1)) if d.coin(0.9) else []

    def ref(v):
        x = holder(v["operand"])
        dims = ints(v["dimensions"])
        reject_unless(all(0 <= k < x.ndim for k in dims))
        reject_unless(all(q == p + 1 for p, q in zip(dims, dims[1:])))
        if not dims:
            return expect(x, dtype_of(v["operand"]))
        shp = (
            list(x.shape[: dims[0]])
            + [math.prod(x.shape[k] for k in dims)]
            + list(x.shape[dims[-1] + 1 :])
        )
        return expect(x.reshape(shp), dtype_of(v["operand"]))

    return Case(
        "collapse",
        [_operand_param(d, dt, shape), P("dimensions", dims, "dims", rank=len(shape))],
        ref,
    )


@gen("transpose")
def g_transpose(d):
    dt = _move_dtype(d)
    shape = d.shape()
    perm = [int(i) for i in d.rng.permutation(len(shape))]

    def ref(v):
        x = holder(v["operand"])
        p = ints(v["permutation"], x.ndim)
        reject_unless(sorted(p) == list(range(x.ndim)))
        return expect(TM.ref_transpose(x, p), dtype_of(v["operand"]))

    return Case(
        "transpose",
        [_operand_param(d, dt, shape), P("permutation", perm, "dims", rank=len(shape))],
        ref,
    )


@gen("slice")
def g_slice(d):
    dt = _move_dtype(d)
    shape = d.shape()
    start, limit, strides = [], [], []
    for n in shape:
        s = d.int(0, n)
        start.append(s)
        limit.append(d.int(s, n))
        strides.append(d.int(1, 3))

    def ref(v):
        x = holder(v["operand"])
        s, l_ = ints(v["start_indices"], x.ndim), ints(v["limit_indices"], x.ndim)
        st = [1] * x.ndim if v["strides"] is None else ints(v["strides"], x.ndim)
        reject_unless(all(0 <= a <= b <= n for a, b, n in zip(s, l_, x.shape)))
        reject_unless(all(k > 0 for k in st))
        return expect(TM.ref_slice(x, s, l_, st), dtype_of(v["operand"]))

    return Case(
        "slice",
        [
            _operand_param(d, dt, shape),
            P("start_indices", start, "ints"),
            P("limit_indices", limit, "ints"),
            P("strides", strides if d.coin(0.7) else None, "ints", none_ok=True),
        ],
        ref,
    )


def _starts(d, shape, as_tensors):
    vals = [d.int(-2, n + 2) for n in shape]
    if as_tensors:
        t = (
            d.choice([DT["i32"], DT["i64"], DT["ui32"]])
            if not d.edge
            else d.choice([DT["i32"], DT["i64"], DT["ui8"], DT["i8"], DT["ui64"]])
        )
        if t.kind == "ui":
            vals = [max(v, 0) for v in vals]
        return [xo.tensor(v, t) for v in vals]
    return vals


def _start_ints(v, n):
    reject_unless(isinstance(v, (list, tuple)) and len(v) == n)
    out, kinds = [], set()
    for s in v:
        if isinstance(s, xo.Tensor):
            reject_unless(s.ndim == 0 and s.dtype.kind in ("si", "ui"))
            kinds.add(s.dtype)
            out.append(int(s.item()))
        else:
            out.append(an_int(s))
            kinds.add("py")
    reject_unless(len(kinds - {"py"}) <= 1, "start types differ")
    return out


@gen("dynamic_slice")
def g_dynamic_slice(d):
    dt = _move_dtype(d)
    shape = d.shape()
    sizes = [d.int(0, n) for n in shape]

    def ref(v):
        x = holder(v["operand"])
        sz = ints(v["slice_sizes"], x.ndim)
        reject_unless(all(0 <= a <= n for a, n in zip(sz, x.shape)))
        s = _start_ints(v["start_indices"], x.ndim)
        return expect(TM.ref_dynamic_slice(x, s, sz), dtype_of(v["operand"]))

    return Case(
        "dynamic_slice",
        [
            _operand_param(d, dt, shape),
            P("start_indices", _starts(d, shape, d.coin()), "ints"),
            P("slice_sizes", sizes, "ints"),
        ],
        ref,
    )


@gen("dynamic_update_slice")
def g_dynamic_update_slice(d):
    dt = _move_dtype(d)
    shape = d.shape()
    ushape = tuple(d.int(0, n) for n in shape)

    def ref(v):
        x, u = holder(v["operand"]), holder(v["update"])
        dt = same_types([v["operand"], v["update"]])
        reject_unless(u.ndim == x.ndim and all(a <= b for a, b in zip(u.shape, x.shape)))
        s = _start_ints(v["start_indices"], x.ndim)
        return expect(TM.ref_dynamic_update_slice(x, u, s), dt)

    return Case(
        "dynamic_update_slice",
        [
            _operand_param(d, dt, shape),
            P("update", d.operand(dt, ushape), "tensor"),
            P("start_indices", _starts(d, shape, d.coin()), "ints"),
        ],
        ref,
    )


@gen("pad")
def g_pad(d):
    dt = _move_dtype(d)
    shape = d.shape()
    lo = [d.int(-min(n, 2), 2) for n in shape]
    hi = [d.int(-min(n, 2), 2) for n in shape]
    it = [d.int(0, 2) for n in shape]
    for i, n in enumerate(shape):  # keep each result dim >= 0
        size = n + max(n - 1, 0) * it[i]
        if lo[i] + hi[i] + size < 0:
            lo[i], hi[i] = 0, 0
    pv = d.operand(dt, ())

    def ref(v):
        x, p = holder(v["operand"]), holder(v["padding_value"])
        dt = same_types([v["operand"], v["padding_value"]])
        reject_unless(p.shape == ())
        lo, hi = ints(v["edge_padding_low"], x.ndim), ints(v["edge_padding_high"], x.ndim)
        it = ints(v["interior_padding"], x.ndim, lo=0)
        shp = [a + n + max(n - 1, 0) * i + b for n, a, b, i in zip(x.shape, lo, hi, it)]
        reject_unless(all(s >= 0 for s in shp) and math.prod(shp) < 10**6)
        return expect(TM.ref_pad(x, p, lo, hi, it), dt)

    return Case(
        "pad",
        [
            _operand_param(d, dt, shape),
            P("padding_value", pv, "tensor"),
            P("edge_padding_low", lo, "ints"),
            P("edge_padding_high", hi, "ints"),
            P("interior_padding", it, "ints"),
        ],
        ref,
    )


@gen("concatenate")
def g_concatenate(d):
    dt = _move_dtype(d)
    shape = d.shape(lo=1)
    dim = d.int(0, len(shape) - 1)
    xs = []
    for _ in range(d.int(1, 3)):
        s = list(shape)
        s[dim] = d.dim(0, 3)
        xs.append(d.operand(dt, tuple(s)))

    def ref(v):
        ins = v["inputs"]
        reject_unless(isinstance(ins, (list, tuple)) and len(ins) >= 1)
        dt = same_types(ins)
        hs = [holder(x) for x in ins]
        dim = an_int(v["dimension"], 0, hs[0].ndim - 1)
        reject_unless(
            all(
                h.ndim == hs[0].ndim
                and all(a == b for k, (a, b) in enumerate(zip(h.shape, hs[0].shape)) if k != dim)
                for h in hs
            )
        )
        return expect(TM.ref_concatenate(hs, dim), dt)

    return Case(
        "concatenate",
        [P("inputs", xs, "tensors"), P("dimension", dim, "dim", rank=len(shape))],
        ref,
    )


@gen("reverse")
def g_reverse(d):
    dt = _move_dtype(d)
    shape = d.shape()
    dims = [int(k) for k in d.rng.permutation(len(shape))[: d.int(0, len(shape))]]

    def ref(v):
        x = holder(v["operand"])
        dims = ints(v["dimensions"])
        reject_unless(len(set(dims)) == len(dims) and all(0 <= k < x.ndim for k in dims))
        return expect(TM.ref_reverse(x, dims), dtype_of(v["operand"]))

    return Case(
        "reverse",
        [_operand_param(d, dt, shape), P("dimensions", dims, "dims", rank=len(shape))],
        ref,
    )


@gen("get_dimension_size")
def g_get_dimension_size(d):
    dt = _move_dtype(d)
    shape = d.shape(lo=1)

    def ref(v):
        x = holder(v["operand"])
        k = an_int(v["dimension"], 0, x.ndim - 1)
        return expect(np.array(x.shape[k], np.int32), DT["i32"])

    return Case(
        "get_dimension_size",
        [
            _operand_param(d, dt, shape),
            P("dimension", d.int(0, len(shape) - 1), "dim", rank=len(shape)),
        ],
        ref,
    )


@gen("set_dimension_size")
def g_set_dimension_size(d):
    dt = _move_dtype(d)
    shape = d.shape(lo=1)
    k = d.int(0, len(shape) - 1)
    n = d.int(0, shape[k])
    size = n if d.coin() else xo.tensor(n, d.choice([DT["i32"], DT["i64"]]))

    def ref(v):
        x = holder(v["operand"])
        k = an_int(v["dimension"], 0, x.ndim - 1)
        s = v["size"]
        if isinstance(s, xo.Tensor):
            reject_unless(s.ndim == 0 and s.dtype.kind in ("si", "ui"))
            s = int(s.item())
        s = an_int(s, 0, x.shape[k])
        return expect(np.take(x, range(s), axis=k), dtype_of(v["operand"]))

    return Case(
        "set_dimension_size",
        [
            _operand_param(d, dt, shape),
            P("size", size, "int"),
            P("dimension", k, "dim", rank=len(shape)),
        ],
        ref,
    )


# ---------------------------------------------------------------------------------------
# Conversion
# ---------------------------------------------------------------------------------------


@gen("convert")
def g_convert(d):
    src = d.dtype(ALL, kernel=False)
    dst = d.dtype(ALL, kernel=False)
    shape = d.shape()

    def ref(v):
        src = dtype_of(v["operand"])
        reject_unless(not isinstance(v["dtype"], xo.Tensor) and v["dtype"] is not None)
        dst = xo.as_dtype(v["dtype"])
        reject_unless(src.kind != "quant" and dst.kind != "quant")
        x = holder(v["operand"]).reshape(-1)
        with np.errstate(all="ignore"):
            vals = x.astype(src.compute) if src.is_narrow else x
            return dst, x.size, convert_expected(src, dst, vals)

    def cmp(out, want, v):  # as tests/test_conversion.py::test_convert_every_pair
        dst, n, w = want
        assert out.dtype is dst and out.shape == np.shape(v["operand"])
        got = np.asarray(out).reshape(-1)
        what = f"{dtype_of(v['operand']).name}->{dst.name}"
        if dst.is_bool or dst.is_int:
            with np.errstate(all="ignore"):
                assert got.astype(np.int64 if not dst.is_unsigned else np.uint64).tolist() == list(
                    w
                ), what
        elif dst.is_complex:
            convert_float_bits(got.real, w.real, what + " (real)")
            convert_float_bits(got.imag, w.imag, what + " (imag)")
        elif dst.name in FORMATS:
            assert_format_bits(got, *w, dst.name, f" from {what}")
        else:
            convert_float_bits(got, w, what)

    return Case(
        "convert",
        [P("operand", d.operand(src, shape), "tensor"), P("dtype", dst, "dtype")],
        ref,
        cmp,
    )


def _bits(x, dt):
    """Each element's bit pattern as a Python int of width(dt) bits."""
    w = 1 if dt.kind == "bool" else dt.bits
    flat = np.ascontiguousarray(x).reshape(-1)
    if dt.kind == "complex":
        h = flat.view(np.uint32 if dt.name == "c64" else np.uint64).reshape(-1, 2)
        half = dt.bits // 2
        return [int(a) | (int(b) << half) for a, b in h.tolist()], w
    if dt.kind == "bool":
        return [int(b) for b in flat.tolist()], w
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[flat.itemsize]
    return [int(b) & ((1 << w) - 1) for b in flat.view(u).tolist()], w


def _from_bits(pats, dt):
    w = 1 if dt.kind == "bool" else dt.bits
    if dt.kind == "bool":
        return np.array([p != 0 for p in pats], np.bool_)
    if dt.kind == "complex":
        half = w // 2
        u = np.uint32 if dt.name == "c64" else np.uint64
        h = np.array([[p & ((1 << half) - 1), p >> half] for p in pats], u).reshape(-1)
        return h.view(dt.np)
    if dt.kind == "si" and w < 8:
        return np.array([p - (1 << w) if p >> (w - 1) else p for p in pats], np.int64).astype(dt.np)
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.np.itemsize]
    return np.array(pats, u).view(dt.np)


@gen("bitcast_convert")
def g_bitcast_convert(d):
    src = d.dtype(ALL, kernel=False)
    w = 1 if src.kind == "bool" else src.bits
    cands = [
        t
        for t in ALL
        if (
            w % (1 if t.kind == "bool" else t.bits) == 0
            or (1 if t.kind == "bool" else t.bits) % w == 0
        )
        and (t.kind == "complex") == (src.kind == "complex")
    ]
    dst = d.choice(cands)
    wd = 1 if dst.kind == "bool" else dst.bits
    shape = d.shape(hi=2)
    if wd > w:
        shape = shape + (wd // w,)

    def ref(v):
        src, dst = dtype_of(v["operand"]), v["dtype"]
        reject_unless(not isinstance(dst, xo.Tensor) and dst is not None)
        dst = xo.as_dtype(dst)
        if src.kind == "quant" or dst.kind == "quant":
            return None  # on storage types (C1): invariants only
        reject_unless((src.kind == "complex") == (dst.kind == "complex"))
        x = holder(v["operand"])
        pats, w = _bits(x, src)
        wd = 1 if dst.kind == "bool" else dst.bits
        if wd == w:
            return expect(_from_bits(pats, dst).reshape(x.shape), dst)
        if wd < w:
            reject_unless(w % wd == 0)
            k = w // wd
            out = [(p >> (wd * j)) & ((1 << wd) - 1) for p in pats for j in range(k)]
            return expect(_from_bits(out, dst).reshape(x.shape + (k,)), dst)
        reject_unless(wd % w == 0 and x.ndim >= 1 and x.shape[-1] == wd // w)
        k = wd // w
        out = [sum(pats[i + j] << (w * j) for j in range(k)) for i in range(0, len(pats), k)]
        return expect(_from_bits(out, dst).reshape(x.shape[:-1]), dst)

    return Case(
        "bitcast_convert",
        [P("operand", d.operand(src, shape), "tensor"), P("dtype", dst, "dtype")],
        ref,
        lambda out, want, v: None if want is None else agree(out, want),
    )


IEEE_LIKE = {
    "f16": (16, 10),
    "bf16": (16, 7),
    "f32": (32, 23),
    "f64": (64, 52),
    "f8E5M2": (8, 2),
    "f8E4M3": (8, 3),
    "f8E3M4": (8, 4),
}


@gen("reduce_precision")
def g_reduce_precision(d):
    dt = d.dtype([DT[n] for n in IEEE_LIKE], kernel=True)
    shape = d.shape()
    from xops.ops.conversion import reduce_precision_reference

    def ref(v):
        dt = dtype_of(v["operand"])
        reject_unless(dt.kind in ("float", "quant"))
        e = an_int(v["exponent_bits"], 1, 2**31 - 1)
        m = an_int(v["mantissa_bits"], 0, 2**31 - 1)
        if dt.name not in IEEE_LIKE or dt.kind == "quant":
            return None  # checked for invariants only
        width, mw = IEEE_LIKE[dt.name]
        x = holder(v["operand"])
        u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.itemsize]
        bits = x.reshape(-1).view(u)
        r = reduce_precision_reference(bits, width, mw, min(e, 64), min(m, 64))
        return dt, x, np.asarray(r).astype(u).view(dt.np).reshape(x.shape)

    def cmp(out, want, v):
        if want is None:
            return
        dt, x, w = want
        agree(out, expect(w, dt))

    return Case(
        "reduce_precision",
        [
            P("operand", d.operand(dt, shape), "tensor"),
            P("exponent_bits", d.int(1, 11), "int", huge_ok=True),
            P("mantissa_bits", d.int(0, 24), "int", huge_ok=True),
        ],
        ref,
        cmp,
    )


# ---------------------------------------------------------------------------------------
# Tokens and tuples
# ---------------------------------------------------------------------------------------


def _token_or_tensor(d):
    return xo.create_token() if d.coin() else d.operand(d.dtype(ALL, kernel=False), d.shape(hi=2))


@gen("after_all")
def g_after_all(d):
    toks = [xo.create_token() for _ in range(d.int(0, 3))]

    def ref(v):
        reject_unless(all(isinstance(t, xo.Token) for t in v["inputs"]))
        return xo.Token()

    return Case(
        "after_all", [P("inputs", toks, "varargs")], ref, lambda out, want, v: _is_token(out)
    )


def _is_token(out):
    assert isinstance(out, xo.Token), f"not a Token: {out!r}"


@gen("create_token")
def g_create_token(d):
    return Case("create_token", [], lambda v: xo.Token(), lambda out, want, v: _is_token(out))


def _same_structure(out, vals):
    assert type(out) is tuple, f"result is a {type(out).__name__}, not a tuple"
    assert len(out) == len(vals), f"{len(out)} elements, want {len(vals)}"
    for o, x in zip(out, vals):
        if isinstance(x, xo.Token):
            assert isinstance(o, xo.Token)
        elif isinstance(x, tuple):
            _same_structure(o, x)
        else:
            agree(o, expect(holder(x), dtype_of(x)))


@gen("tuple")
def g_tuple(d):
    vals = [_token_or_tensor(d) for _ in range(d.int(0, 3))]
    if d.coin(0.3):
        vals.append(xo.tuple(*[_token_or_tensor(d) for _ in range(d.int(0, 2))]))

    def ref(v):
        for x in v["val"]:
            if not isinstance(x, (xo.Token, tuple)):
                holder(x)
        return v["val"]

    return Case(
        "tuple", [P("val", vals, "varargs")], ref, lambda out, want, v: _same_structure(out, want)
    )


@gen("get_tuple_element")
def g_get_tuple_element(d):
    vals = [_token_or_tensor(d) for _ in range(d.int(1, 3))]

    def ref(v):
        t = v["tuple"]
        reject_unless(isinstance(t, tuple))
        i = an_int(v["index"], 0, len(t) - 1)
        return t[i]

    def cmp(out, want, v):
        if isinstance(want, xo.Token):
            return _is_token(out)
        agree(out, expect(holder(want), dtype_of(want)))

    return Case(
        "get_tuple_element",
        [P("tuple", xo.tuple(*vals), "any"), P("index", d.int(0, len(vals) - 1), "int")],
        ref,
        cmp,
    )


@gen("optimization_barrier")
def g_optimization_barrier(d):
    vals = [_token_or_tensor(d) for _ in range(d.int(0, 3))]

    def ref(v):
        for x in v["operand"]:
            if not isinstance(x, xo.Token):
                holder(x)
        return builtins_tuple(v["operand"])

    return Case(
        "optimization_barrier",
        [P("operand", vals, "varargs")],
        ref,
        lambda out, want, v: _same_structure(out, want),
    )


builtins_tuple = tuple
