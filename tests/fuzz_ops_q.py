"""Fuzz generators, part 5: the quantization ops (references: tests/test_quantization.py's
quantize and dequantize, value by value, and fuzz_ops_a.quantize_ref for the values they
leave out)."""

import numpy as np
from fuzz_core import (
    ALL,
    DT,
    FLOATS,
    INTS,
    Case,
    P,
    Reject,
    dtype_of,
    exact,
    expect,
    from_f64,
    holder,
    reject_unless,
)
from fuzz_ops_a import agree, gen, quantize_ref
from test_quantization import ref_dequantize

import xops as xo

# ---------------------------------------------------------------------------------------
# Quantization (references: tests/test_quantization.py)
# ---------------------------------------------------------------------------------------


def _per_axis(qt, x, fn):
    """Apply fn(slice, qt, slice_index) per slice of the quantization dimension."""
    if qt.quantization_dimension is None:
        return fn(x, qt, 0)
    ax = qt.quantization_dimension
    parts = [fn(np.take(x, i, axis=ax), qt, i) for i in range(x.shape[ax])]
    return np.stack(parts, axis=ax) if parts else np.zeros(x.shape, np.float64)


def _qtype_param(d, shape):
    axis = None
    nonzero = [k for k, n in enumerate(shape) if n]
    if nonzero and d.coin(0.4):
        axis = d.choice(nonzero)
    return d.quantized(axis=axis, n=shape[axis] if axis is not None else 1)


@gen("uniform_quantize")
def g_uniform_quantize(d):
    shape = d.shape()
    qt = _qtype_param(d, shape)
    ex = qt.expressed_type
    x = d.operand(ex, shape, lo=-60.0, hi=60.0)

    def ref(v):
        q = v["dtype"]
        reject_unless(isinstance(q, (xo.QuantizedType, str)))
        q = xo.as_dtype(q)
        reject_unless(q.kind == "quant")
        src = dtype_of(v["operand"])
        a = holder(v["operand"])
        if q.quantization_dimension is not None:
            reject_unless(
                q.quantization_dimension < a.ndim
                and len(q.scales) == a.shape[q.quantization_dimension]
            )
        if src.kind == "quant":  # requantize: dequantize first (per-tensor sources here)
            reject_unless(
                src.quantization_dimension is None and src.expressed_type == q.expressed_type,
                "expressed type",
            )
            vals = (
                np.vectorize(lambda t: float(ref_dequantize(int(t), src)), otypes=[np.float64])(
                    a.astype(np.int64)
                )
                if a.size
                else np.zeros(a.shape)
            )
        else:
            reject_unless(src == q.expressed_type, "expressed type")
            vals = exact(a, src)
        w = _per_axis(
            q,
            vals,
            lambda s, qq, i: (
                np.vectorize(lambda t: quantize_ref(float(t), qq, i), otypes=[np.int64])(s)
                if s.size
                else np.zeros(s.shape, np.int64)
            ),
        )
        return expect(np.asarray(w).astype(q.storage_type.np), q)

    return Case("uniform_quantize", [P("operand", x, "tensor"), P("dtype", qt, "dtype")], ref)


@gen("uniform_dequantize")
def g_uniform_dequantize(d):
    shape = d.shape()
    qt = _qtype_param(d, shape)
    x = xo.tensor(d.values(qt, shape), qt)

    def ref(v):
        x = v["operand"]
        reject_unless(isinstance(x, xo.Tensor) and x.dtype.kind == "quant")
        q = x.dtype
        a = np.asarray(x).astype(np.int64)
        w = _per_axis(
            q,
            a,
            lambda s, qq, i: (
                np.vectorize(lambda t: float(ref_dequantize(int(t), qq, i)), otypes=[np.float64])(s)
                if s.size
                else np.zeros(s.shape)
            ),
        )
        return expect(from_f64(w, q.expressed_type), q.expressed_type)

    return Case("uniform_dequantize", [P("operand", x, "tensor")], ref)


@gen("dequantize_op_quantize")
def g_dequantize_op_quantize(d):
    shape = d.shape()
    qa, qb = d.quantized(DT["f32"]), d.quantized(DT["f32"])
    qo = d.quantized(DT["f32"])
    name = d.choice(["add", "subtract", "multiply", "maximum"])
    a, b = xo.tensor(d.values(qa, shape), qa), xo.tensor(d.values(qb, shape), qb)

    def ref(v):
        if v["op"] is not getattr(xo, name):
            return None  # a mutated op: dequantize_op_quantize runs whatever it is given
        ins = list(v["inputs_and_output_type"])
        reject_unless(len(ins) == 3)
        x, y, out = ins
        reject_unless(isinstance(out, xo.QuantizedType))
        for t in (x, y):
            reject_unless(
                isinstance(t, xo.Tensor)
                and t.dtype.kind == "quant"
                and t.dtype.quantization_dimension is None
            )
        reject_unless(x.shape == y.shape and out.quantization_dimension is None)

        def dequantized(t):
            if not t.size:
                return np.zeros(t.shape)
            one = np.vectorize(lambda s: float(ref_dequantize(int(s), t.dtype)))
            return one(np.asarray(t).astype(np.int64))

        fx, fy = dequantized(x), dequantized(y)
        fx, fy = fx.astype(np.float32), fy.astype(np.float32)
        r = {
            "add": np.add,
            "subtract": np.subtract,
            "multiply": np.multiply,
            "maximum": np.maximum,
        }[name](fx, fy)
        w = (
            np.vectorize(lambda t: quantize_ref(float(t), out), otypes=[np.int64])(r)
            if r.size
            else np.zeros(r.shape, np.int64)
        )
        return expect(w.astype(out.storage_type.np), out)

    def cmp(out, want, v):  # the float op result may sit on a rounding tie: +-1
        if want is None:
            return
        agree(out, want) if not out.size else None
        g, w = np.asarray(out).astype(np.int64), np.asarray(want[1]).astype(np.int64)
        assert out.dtype == want[2] and g.shape == w.shape
        assert np.all(np.abs(g - w) <= 1), f"storage {g.tolist()} != {w.tolist()}"

    return Case(
        "dequantize_op_quantize",
        [
            P("op", getattr(xo, name), "body", lenient=True),
            P("inputs_and_output_type", [a, b, qo], "varargs"),
        ],
        ref,
        cmp,
    )


@gen("QuantizedType")
def g_quantized_type(d):
    ex = d.choice([t for t in FLOATS if t.bits > 4])
    st = d.choice([t for t in INTS if t.bits < ex.bits])
    n = d.int(1, 3)
    scales = [d.choice([0.5, 0.1, 1.0, 3.0]) for _ in range(n)]
    zps = [d.int(max(st.min, -3), min(st.max, 3)) for _ in range(n)]
    axis = d.int(0, 2) if n > 1 or d.coin() else None

    def ref(v):
        st, ex = xo.as_dtype(v["storage_type"]), xo.as_dtype(v["expressed_type"])
        reject_unless(st.kind in ("si", "ui") and ex.kind == "float" and st.bits < ex.bits)
        raise Reject("checked by invariants only")  # valid types compare by their text

    def cmp(out, want, v):
        assert isinstance(out, xo.QuantizedType)

    case = Case(
        "QuantizedType",
        [
            P("storage_type", st, "dtype"),
            P("expressed_type", ex, "dtype"),
            P("scales", scales if axis is not None else scales[0], "any"),
            P("zero_points", zps if axis is not None else zps[0], "ints"),
            P("quantization_dimension", axis, "int", none_ok=True),
        ],
        names=("quantized type",),
    )
    case.ref = None
    case.cmp = cmp
    case.extra["result_not_tensor"] = True
    return case


@gen("is_quantized")
def g_is_quantized(d):
    x = (
        xo.tensor(d.values(d.quantized(), (2,)), d.quantized())
        if d.coin()
        else d.operand(d.dtype(ALL, kernel=False), d.shape(hi=1))
    )

    def ref(v):
        x = v["x"]
        return isinstance(getattr(x, "dtype", x), xo.QuantizedType)

    def cmp(out, want, v):
        assert out is want, f"{out!r} != {want!r}"

    case = Case("is_quantized", [P("x", x, "tensor", lenient=True)], ref, cmp)
    case.extra["result_not_tensor"] = True
    return case
