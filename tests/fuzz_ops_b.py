"""Fuzz generators, part 2: contractions, convolution, reductions and windows, batch
norm, gather/scatter/sort/top_k, fft, linear solves, random numbers, control flow.

References: the naive spec-shaped references that sit beside each fast kernel in
xops (``*_reference``: index-by-index loops that are the test oracles of the op's own
tests), einsum for contractions, NumPy's FFT, and plain Python for control flow and
sorting. Ops on compiled kernels draw element types from fuzz_core.KERNEL_TYPES by default."""

import math

import ml_dtypes
import numpy as np
import test_indexing as TI
from fuzz_core import (
    ALL,
    DT,
    Case,
    P,
    Reject,
    agree,
    dtype_of,
    exact,
    expect,
    flat_results,
    from_f64,
    holder,
    reject_unless,
    values,
)
from fuzz_ops_a import GEN, an_int, gen, ints, same_types  # noqa: F401 (GEN re-exported)
from test_fft import _reference as fft_reference

import xops as xo
from xops.ops.convolution import convolution_reference
from xops.ops.indexing import gather_reference, scatter_reference
from xops.ops.normalization import (
    batch_norm_grad_reference,
    batch_norm_inference_reference,
    batch_norm_training_reference,
)
from xops.ops.reduction import map_reference, reduce_reference
from xops.ops.windows import reduce_window_reference, select_and_scatter_reference
from xops.ops.solve import cholesky_reference, triangular_solve_reference

NUM = [d for d in ALL if d.kind != "bool"]


def eps(dt):
    if dt.kind == "complex":
        dt = DT["f32"] if dt.name == "c64" else DT["f64"]
    if dt.kind != "float":
        return 0.0
    return float(ml_dtypes.finfo(dt.np).eps) if dt.is_narrow else float(np.finfo(dt.np).eps)


def lib(fn, **rename):
    """A library reference called with the case's values (renamed); its SpecErrors are
    the reference's rejections."""

    def ref(v):
        kw = {rename.get(k, k): x for k, x in v.items() if rename.get(k, k) is not None}
        try:
            return fn(**kw)
        except xo.SpecError as e:
            raise Reject(str(e)) from None

    return ref


def _tensors(v):
    return [
        t
        for t in (v if isinstance(v, (list, tuple)) else [v])
        if isinstance(t, (xo.Tensor, np.ndarray))
    ]


def lib_f32(fn, data, bodies):
    """A library reference for ops with bodies. Where a recognised ``xo.add`` body folds
    a narrow float type, the kernel adds in float32 and rounds once per op
    (docs/semantics.md, "Rounding"), so the reference then runs on the float32 values
    and its results are rounded once; elsewhere it calls the body on the type itself."""
    base = lib(fn)

    def ref(v):
        dts = {dtype_of(t) for k in data for t in _tensors(v.get(k))}
        narrow = len(dts) == 1 and next(iter(dts)).kind == "float" and next(iter(dts)).is_narrow
        if not (narrow and all(v.get(b) is xo.add for b in bodies)):
            return base(v)
        (dt,) = dts
        w = dict(v)
        for k in data:
            x = v[k]
            w[k] = (
                [xo.convert(t, "f32") for t in x]
                if isinstance(x, (list, tuple))
                else xo.convert(x, "f32")
            )
        out = base(w)
        return (
            tuple(xo.convert(o, dt) for o in out) if isinstance(out, tuple) else xo.convert(out, dt)
        )

    return ref


def close_cmp(scale_fn=None, k=8.0):
    """Tolerant comparison for accumulated float results: |got - want| <= k * eps(type)
    * (|want| + scale) (scale from scale_fn(values), default 1); ints exact."""

    def cmp(out, want, v):
        outs, wants = flat_results(out), flat_results(want)
        scale = scale_fn(v) if scale_fn else 1.0
        assert len(outs) == len(wants), f"{len(outs)} results, want {len(wants)}"
        for o, w in zip(outs, wants):
            wdt = w.dtype if isinstance(w, xo.Tensor) else w[2]
            e = k * eps(wdt)
            agree(o, w, e, e * scale)

    return cmp


def _maxabs(*xs):
    m = 1.0
    for x in xs:
        a = exact(holder(x), dtype_of(x))
        if a.size:
            with np.errstate(invalid="ignore"):
                f = (
                    np.abs(a[np.isfinite(a)])
                    if a.dtype.kind in "fc"
                    else np.abs(a.astype(np.float64))
                )
            if f.size:
                m = max(m, float(f.max()))
    return m


# ---------------------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------------------


def _dot_ref(a, b, adt, bdt, spec, pet):
    """einsum in the exact domain: int64/uint64 arithmetic wraps mod 2**64 (a ring, so
    the result mod 2**width is exact), floats in float64/complex128, then one rounding."""
    reject_unless(adt == bdt, "element types differ")
    out = adt if pet is None else xo.as_dtype(pet)
    if adt.name == "f8E8M0FNU" or out.name == "f8E8M0FNU":
        return None  # products of 2**-127 underflow float32 (see the report): invariants
    reject_unless(adt.kind != "quant" and out.kind != "quant")
    if adt.kind == "bool":
        r = np.einsum(spec, a.astype(np.int64), b.astype(np.int64)) != 0
        reject_unless(out.kind == "bool")
        return expect(r, out)
    ea, eb = exact(a, adt), exact(b, bdt)
    with np.errstate(all="ignore"):
        r = np.einsum(spec, ea, eb)
    if adt.kind in ("si", "ui"):
        reject_unless(out.kind in ("si", "ui", "float", "complex"))
        if out.kind in ("si", "ui"):
            return expect(
                xo.tensor(r)
                .numpy()
                .astype(np.int64 if out.kind == "si" else np.uint64)
                .astype(out.compute if out.is_narrow else out.np)
                if out.bits >= 8
                else _wrap_small(r, out),
                out,
            )
        return expect(from_f64(r.astype(np.float64), out), out)
    reject_unless(
        out.kind in ("float", "complex") and (out.kind == "complex") == (adt.kind == "complex")
    )
    return expect(from_f64(r, out), out)


def _wrap_small(r, dt):
    v = np.asarray(r).astype(np.int64) & ((1 << dt.bits) - 1)
    if dt.kind == "si":
        v = np.where(v >= (1 << (dt.bits - 1)), v - (1 << dt.bits), v)
    return v.astype(dt.np)


def _dot_cmp(out, want, v):
    if want is None:
        return
    wdt = want[2]
    if wdt.kind in ("float", "complex"):
        k = v.get("_k", 1)
        e = 4 * eps(wdt) * (k + 2)
        agree(out, want, e, e * _maxabs(v["lhs"]) * _maxabs(v["rhs"]) * k)
    else:
        agree(out, want)


@gen("dot_general")
def g_dot_general(d):
    dt = d.dtype(ALL)
    nb, nc = d.int(0, 1), d.int(0, 2)
    bsz = [d.dim(0, 3) for _ in range(nb)]
    csz = [d.dim(0, 3) for _ in range(nc)]
    lf, rf = [d.dim(0, 3) for _ in range(d.int(0, 1))], [d.dim(0, 3) for _ in range(d.int(0, 1))]
    lshape = bsz + lf + csz
    rshape = bsz + csz + rf
    lperm, rperm = d.rng.permutation(len(lshape)), d.rng.permutation(len(rshape))
    lpos = {int(o): i for i, o in enumerate(lperm)}  # original axis -> position
    rpos = {int(o): i for i, o in enumerate(rperm)}
    lb = [lpos[i] for i in range(nb)]
    rb = [rpos[i] for i in range(nb)]
    lc = [lpos[nb + len(lf) + i] for i in range(nc)]
    rc = [rpos[nb + i] for i in range(nc)]
    # (no +-max, +-inf: whether a partial sum overflows depends on the summation order)
    a = d.operand(dt, tuple(lshape[int(o)] for o in lperm), small=True, extremes=False)
    b = d.operand(dt, tuple(rshape[int(o)] for o in rperm), small=True, extremes=False)
    pet = None
    if d.coin(0.2) and dt.kind == "float":
        pet = d.choice([DT["f32"], DT["f64"]])

    def ref(v):
        A, B = holder(v["lhs"]), holder(v["rhs"])
        adt, bdt = dtype_of(v["lhs"]), dtype_of(v["rhs"])
        lb, rb = ints(v["lhs_batching_dimensions"]), ints(v["rhs_batching_dimensions"])
        lc, rc = ints(v["lhs_contracting_dimensions"]), ints(v["rhs_contracting_dimensions"])
        reject_unless(len(lb) == len(rb) and len(lc) == len(rc))
        for ds, r in ((lb + lc, A.ndim), (rb + rc, B.ndim)):
            reject_unless(len(set(ds)) == len(ds) and all(0 <= x < r for x in ds))
        reject_unless(all(A.shape[i] == B.shape[j] for i, j in zip(lb + lc, rb + rc)))
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        la = [None] * A.ndim
        lb_ = [None] * B.ndim
        for i, j in zip(lb + lc, rb + rc):
            la[i] = lb_[j] = next(letters)
        la = [x or next(letters) for x in la]
        lb_ = [x or next(letters) for x in lb_]
        res = (
            [la[i] for i in lb]
            + [x for i, x in enumerate(la) if i not in lb + lc]
            + [x for j, x in enumerate(lb_) if j not in rb + rc]
        )
        v["_k"] = math.prod(A.shape[i] for i in lc) if lc else 1
        return _dot_ref(
            A,
            B,
            adt,
            bdt,
            f"{''.join(la)},{''.join(lb_)}->{''.join(res)}",
            v["preferred_element_type"],
        )

    return Case(
        "dot_general",
        [
            P("lhs", a, "tensor"),
            P("rhs", b, "tensor"),
            P("lhs_batching_dimensions", lb, "dims", rank=len(lshape)),
            P("rhs_batching_dimensions", rb, "dims", rank=len(rshape)),
            P("lhs_contracting_dimensions", lc, "dims", rank=len(lshape)),
            P("rhs_contracting_dimensions", rc, "dims", rank=len(rshape)),
            P("preferred_element_type", pet, "dtype", kw=True, none_ok=True),
        ],
        ref,
        _dot_cmp,
    )


@gen("dot")
def g_dot(d):
    dt = d.dtype(ALL)
    m, k, n = d.dim(0, 3), d.dim(0, 3), d.dim(0, 3)
    ra, rb = d.int(1, 2), d.int(1, 2)
    a = d.operand(dt, (m, k) if ra == 2 else (k,), small=True, extremes=False)
    b = d.operand(dt, (k, n) if rb == 2 else (k,), small=True, extremes=False)

    def ref(v):
        A, B = holder(v["lhs"]), holder(v["rhs"])
        reject_unless(A.ndim in (1, 2) and B.ndim in (1, 2) and A.shape[-1] == B.shape[0])
        v["_k"] = A.shape[-1]
        spec = (
            ("ik" if A.ndim == 2 else "k")
            + ","
            + ("kj" if B.ndim == 2 else "k")
            + "->"
            + ("i" if A.ndim == 2 else "")
            + ("j" if B.ndim == 2 else "")
        )
        return _dot_ref(
            A, B, dtype_of(v["lhs"]), dtype_of(v["rhs"]), spec, v["preferred_element_type"]
        )

    return Case(
        "dot",
        [
            P("lhs", a, "tensor"),
            P("rhs", b, "tensor"),
            P("preferred_element_type", None, "dtype", kw=True, none_ok=True),
        ],
        ref,
        _dot_cmp,
        names=("dot_general",),
    )


# ---------------------------------------------------------------------------------------
# Convolution (reference: xops.ops.convolution.convolution_reference)
# ---------------------------------------------------------------------------------------


def _conv_shapes(d, nsp):
    fgc = d.choice([1, 1, 2])
    bgc = 1 if fgc > 1 or d.coin(0.8) else 2
    n = d.int(1, 2) * bgc
    cin = d.int(1, 2) * fgc
    cout = d.int(1, 2) * fgc * bgc
    sp = [d.int(1, 5) for _ in range(nsp)]
    k = [d.int(1, 3) for _ in range(nsp)]
    return fgc, bgc, (n, cin, *sp), (cout, cin // fgc, *k)


def _conv_scale(v):
    w = holder(v["rhs"])
    return _maxabs(v["lhs"]) * _maxabs(v["rhs"]) * max(int(np.prod(w.shape[1:])), 1)


@gen("convolution")
def g_convolution(d):
    dt = d.dtype([x for x in ALL if x.kind != "bool"])
    nsp = d.int(1, 2)
    fgc, bgc, ls, rs = _conv_shapes(d, nsp)
    params = [
        P("lhs", d.operand(dt, ls, small=True, extremes=False), "tensor"),
        P("rhs", d.operand(dt, rs, small=True, extremes=False), "tensor"),
        P("window_strides", [d.int(1, 2) for _ in range(nsp)], "ints", none_ok=True),
        P(
            "padding",
            [[d.int(-1, 2), d.int(0, 2)] for _ in range(nsp)],
            "pairs",
            none_ok=True,
            neg_ok=True,
        ),
        P("lhs_dilation", [d.int(1, 2) for _ in range(nsp)], "ints", none_ok=True),
        P("rhs_dilation", [d.int(1, 2) for _ in range(nsp)], "ints", none_ok=True),
        P("window_reversal", [d.coin() for _ in range(nsp)] if d.coin() else None, "any"),
        P("dimension_numbers", None, "enum", none_ok=True),
        P("feature_group_count", fgc, "int"),
        P("batch_group_count", bgc, "int"),
    ]
    return Case("convolution", params, lib(convolution_reference), close_cmp(_conv_scale, 16))


@gen("conv_with_general_padding")
def g_conv_with_general_padding(d):
    dt = d.dtype([x for x in ALL if x.kind != "bool"])
    nsp = d.int(1, 2)
    fgc, bgc, ls, rs = _conv_shapes(d, nsp)
    params = [
        P("lhs", d.operand(dt, ls, small=True, extremes=False), "tensor"),
        P("rhs", d.operand(dt, rs, small=True, extremes=False), "tensor"),
        P("window_strides", [d.int(1, 2) for _ in range(nsp)], "ints", none_ok=True),
        P(
            "padding",
            [[d.int(0, 2), d.int(0, 2)] for _ in range(nsp)],
            "pairs",
            neg_ok=True,
            none_ok=True,
        ),
        P("feature_group_count", fgc, "int"),
        P("batch_group_count", bgc, "int"),
    ]
    return Case(
        "conv_with_general_padding",
        params,
        lib(convolution_reference),
        close_cmp(_conv_scale, 16),
        names=("convolution",),
    )


@gen("conv")
def g_conv(d):
    dt = d.dtype([x for x in ALL if x.kind != "bool"])
    nsp = d.int(1, 2)
    fgc, bgc, ls, rs = _conv_shapes(d, nsp)
    x = d.operand(dt, ls, small=True, extremes=False)
    w = d.operand(dt, rs, small=True, extremes=False)
    strides = [d.int(1, 2) for _ in range(nsp)]

    def ref(v):
        pad = "VALID" if v["padding"] is None else v["padding"]  # (None: no padding)
        reject_unless(isinstance(pad, str) and pad.upper() in ("SAME", "VALID"))
        pad = pad.upper()
        X, W = holder(v["lhs"]), holder(v["rhs"])
        st = (
            (
                [1] * (X.ndim - 2)
                if v["window_strides"] is None
                else ints(v["window_strides"], X.ndim - 2, lo=1)
            )
            if X.ndim >= 2
            else None
        )
        reject_unless(st is not None and W.ndim == X.ndim)
        pads = []
        for s, n, k in zip(st, X.shape[2:], W.shape[2:]):
            total = max((-(-n // s) - 1) * s + k - n, 0) if pad == "SAME" else 0
            pads.append((total // 2, total - total // 2))
        return lib(convolution_reference)(
            dict(
                lhs=v["lhs"],
                rhs=v["rhs"],
                window_strides=st,
                padding=pads,
                feature_group_count=v["feature_group_count"],
                batch_group_count=v["batch_group_count"],
            )
        )

    return Case(
        "conv",
        [
            P("lhs", x, "tensor"),
            P("rhs", w, "tensor"),
            P("window_strides", strides, "ints", none_ok=True),
            P("padding", d.choice(["SAME", "VALID"]), "enum", none_ok=True),
            P("feature_group_count", fgc, "int"),
            P("batch_group_count", bgc, "int"),
        ],
        ref,
        close_cmp(_conv_scale, 16),
        names=("convolution",),
    )


# ---------------------------------------------------------------------------------------
# Reductions and windows (references: xops.ops.reduction.*_reference)
# ---------------------------------------------------------------------------------------


def argmax_body(av, ai, bv, bi):
    pick_a = xo.or_(
        xo.compare(av, bv, "GT"), xo.and_(xo.compare(av, bv, "EQ"), xo.compare(ai, bi, "LT"))
    )
    return xo.select(pick_a, av, bv), xo.select(pick_a, ai, bi)


def _body_and_init(d, dt):
    """A body (recognised kernels: add/max/min; or generic) and its identity."""
    if dt.kind == "bool":
        return d.choice([(xo.or_, False), (xo.and_, True)])
    if dt.kind == "complex":
        return xo.add, 0
    name = d.choice(["add", "maximum", "minimum", "generic"])
    if name == "add":
        return xo.add, 0
    if name == "generic":
        return (lambda a, b: xo.add(a, b) if True else None), 0  # not recognised
    lo = -math.inf if dt.kind == "float" else dt.min
    hi = math.inf if dt.kind == "float" else dt.max
    if dt.name in (
        "f4E2M1FN",
        "f6E2M3FN",
        "f6E3M2FN",
        "f8E4M3FN",
        "f8E4M3FNUZ",
        "f8E5M2FNUZ",
        "f8E4M3B11FNUZ",
        "f8E8M0FNU",
    ):
        return xo.add, 0
    return (xo.maximum, lo) if name == "maximum" else (xo.minimum, hi)


def _init_tensor(dt, value):
    if dt.kind == "float":
        return xo.tensor(np.array(value, np.float64), dt)
    if dt.kind == "complex":
        return xo.tensor(np.array(value, np.complex128), dt)
    return xo.tensor(value, dt)


def _count_scale(v, key="inputs"):
    xs = v[key] if isinstance(v[key], (list, tuple)) else [v[key]]
    try:
        n = max(int(np.asarray(holder(xs[0])).size), 1)
    except Reject:
        n = 1
    return n * _maxabs(*xs)


@gen("reduce")
def g_reduce(d):
    dt = d.dtype(ALL)
    shape = d.shape(lo=0)
    dims = [int(k) for k in d.rng.permutation(len(shape))[: d.int(0, len(shape))]]
    if dt.kind in ("si", "float") and d.coin(0.2) and shape:
        # (finite values: with NaNs the argmax body is not associative, the schedule decides)
        x = d.wrap(values(d.rng, dt, shape, small=True), dt)
        idx = xo.tensor(np.indices(shape)[dims[0] if dims else 0].astype(np.int64))
        lo = (
            float(ml_dtypes.finfo(dt.np).min if dt.is_narrow else np.finfo(dt.np).min)
            if dt.kind == "float"
            else dt.min
        )
        return Case(
            "reduce",
            [
                P("inputs", [x, idx], "tensors"),
                P("init_values", [_init_tensor(dt, lo), xo.tensor(0)], "tensors"),
                P("dimensions", dims, "dims", rank=len(shape)),
                P("body", argmax_body, "body"),
            ],
            lib(reduce_reference),
            close_cmp(lambda v: _count_scale(v), 4),
        )
    body, init = _body_and_init(d, dt)
    return Case(
        "reduce",
        [
            P("inputs", d.operand(dt, shape, small=True), "tensor"),
            P("init_values", _init_tensor(dt, init), "tensor"),
            P("dimensions", dims, "dims", rank=len(shape)),
            P("body", body, "body"),
        ],
        lib_f32(reduce_reference, ["inputs", "init_values"], ["body"]),
        close_cmp(lambda v: _count_scale(v), 4),
    )


def _window_attrs(d, shape):
    r = len(shape)
    return dict(
        window_dimensions=[d.int(1, 3) for _ in range(r)],
        window_strides=[d.int(1, 2) for _ in range(r)],
        base_dilations=[d.int(1, 2) for _ in range(r)],
        window_dilations=[d.int(1, 2) for _ in range(r)],
        padding=[[d.int(-1, 2), d.int(0, 2)] for _ in range(r)],
    )


@gen("reduce_window")
def g_reduce_window(d):
    dt = d.dtype(ALL)
    shape = d.shape(lo=0, dhi=5)
    body, init = _body_and_init(d, dt)
    a = _window_attrs(d, shape)
    r = len(shape)
    params = [
        P("inputs", d.operand(dt, shape, small=True), "tensor"),
        P("init_values", _init_tensor(dt, init), "tensor"),
        P("window_dimensions", a["window_dimensions"], "ints", rank=r),
        P("window_strides", a["window_strides"], "ints", none_ok=True),
        P("base_dilations", a["base_dilations"] if d.coin() else None, "ints", none_ok=True),
        P("window_dilations", a["window_dilations"] if d.coin() else None, "ints", none_ok=True),
        P("padding", a["padding"] if d.coin() else None, "pairs", none_ok=True, neg_ok=True),
        P("body", body, "body", kw=True),
    ]
    return Case(
        "reduce_window",
        params,
        lib_f32(reduce_window_reference, ["inputs", "init_values"], ["body"]),
        close_cmp(lambda v: _count_scale(v) * 4, 8),
    )


@gen("select_and_scatter")
def g_select_and_scatter(d):
    dt = d.dtype([x for x in ALL if x.kind in ("si", "ui", "float")])
    shape = d.shape(lo=1, dhi=5)
    r = len(shape)
    win = [d.int(1, 3) for _ in range(r)]
    st = [d.int(1, 2) for _ in range(r)]
    pad = [[d.int(0, 1), d.int(0, 1)] for _ in range(r)]
    nwin = [
        max((n + p[0] + p[1] - w) // s + 1, 0) if n + p[0] + p[1] >= w else 0
        for n, w, s, p in zip(shape, win, st, pad)
    ]
    select = d.choice([lambda a, b: xo.compare(a, b, "GE"), lambda a, b: xo.compare(a, b, "LE")])
    params = [
        P("operand", d.operand(dt, shape, small=True), "tensor"),
        P("source", d.operand(dt, tuple(nwin), small=True), "tensor"),
        P("init_value", _init_tensor(dt, 0), "tensor"),
        P("window_dimensions", win, "ints", none_ok=True),
        P("window_strides", st, "ints", none_ok=True),
        P("padding", pad, "pairs", none_ok=True),
        P("select", select, "body", kw=True),
        P("scatter", xo.add, "body", kw=True),
    ]
    return Case(
        "select_and_scatter",
        params,
        lib_f32(select_and_scatter_reference, ["operand", "source", "init_value"], ["scatter"]),
        close_cmp(lambda v: _count_scale(v, "source") * 4, 8),
    )


@gen("map")
def g_map(d):
    dt = d.dtype([x for x in ALL if x.kind in ("si", "float", "complex")])
    shape = d.shape()
    n = d.int(1, 2)
    comp = xo.negate if n == 1 else d.choice([xo.add, xo.multiply, xo.subtract])
    xs = [d.operand(dt, shape) for _ in range(n)]
    return Case(
        "map",
        [
            P("inputs", xs, "tensors"),
            P("dimensions", list(range(len(shape))), "dims", rank=len(shape)),
            P("computation", comp, "body"),
        ],
        lib(map_reference),
    )


# ---------------------------------------------------------------------------------------
# Batch norm (references: xops.ops.normalization.*_reference, in f32 / f64)
# ---------------------------------------------------------------------------------------


def _bn_inputs(d, grad=False):
    # The reference computes in f32/f64 throughout, while the spec's composition rounds
    # every intermediate to the element type: with the f8/f6/f4 types a variance that
    # underflows to 0 turns results into NaN; so the types here are f32, f64 and bf16.
    dt = d.dtype([DT["f32"], DT["f64"], DT["bf16"]])
    shape = d.shape(lo=1, dlo=1)
    fi = d.int(0, len(shape) - 1)
    c = shape[fi]
    # (no +-max: the composition's intermediate overflow differs by formula)
    x = d.operand(dt, shape, extremes=False)
    scale = d.operand(dt, (c,), extremes=False)
    mean = d.operand(dt, (c,), extremes=False)
    var = d.wrap(from_f64(d.rng.uniform(0.5, 2.0, c), dt), dt)
    return dt, shape, fi, c, x, scale, mean, var


def _bn_compute(v, names):
    dts = [dtype_of(v[n]) for n in names]
    reject_unless(all(t == dts[0] for t in dts) and dts[0].kind == "float")
    dt = dts[0]
    wide = np.float64 if dt.name == "f64" else np.float32
    hs = [holder(v[n]) for n in names]
    x = hs[0]
    fi = an_int(v["feature_index"], 0, x.ndim - 1)
    reject_unless(all(h.shape == (x.shape[fi],) for h in hs[1:] if h.ndim != x.ndim))
    e = v["epsilon"]
    reject_unless(isinstance(e, float) and not isinstance(e, bool))
    # the spec's constant(epsilon, element_type(operand)): rounded to the type (an f8
    # epsilon of 0.001 is 0)
    e = float(np.asarray(xo.tensor(np.float32(e), dt)).astype(np.float64))
    return dt, [h.astype(wide) for h in hs], fi, e


def _bn_cmp(out, want, v):
    outs = out
    for o, (w, dt) in zip(outs, want):
        e = 64 * eps(dt) + 1e-6
        agree(o, expect(from_f64(np.asarray(w, np.float64), dt), dt), e, e * 8)


@gen("batch_norm_training")
def g_batch_norm_training(d):
    dt, shape, fi, c, x, scale, mean, var = _bn_inputs(d)

    def ref(v):
        dt, (x, s, o), fi, e = _bn_compute(v, ["operand", "scale", "offset"])
        reject_unless(s.shape == o.shape == (x.shape[fi],))
        with np.errstate(all="ignore"):
            return [(r, dt) for r in batch_norm_training_reference(x, s, o, e, fi)]

    return Case(
        "batch_norm_training",
        [
            P("operand", x, "tensor"),
            P("scale", scale, "tensor"),
            P("offset", mean, "tensor"),
            P("epsilon", 1e-3, "float"),
            P("feature_index", fi, "dim", rank=len(shape)),
        ],
        ref,
        _bn_cmp,
    )


@gen("batch_norm_inference")
def g_batch_norm_inference(d):
    dt, shape, fi, c, x, scale, mean, var = _bn_inputs(d)

    def ref(v):
        dt, (x, s, o, m, va), fi, e = _bn_compute(
            v, ["operand", "scale", "offset", "mean", "variance"]
        )
        reject_unless(all(t.shape == (x.shape[fi],) for t in (s, o, m, va)))
        with np.errstate(all="ignore"):
            return [(batch_norm_inference_reference(x, s, o, m, va, e, fi), dt)]

    return Case(
        "batch_norm_inference",
        [
            P("operand", x, "tensor"),
            P("scale", scale, "tensor"),
            P("offset", mean, "tensor"),
            P("mean", mean, "tensor"),
            P("variance", var, "tensor"),
            P("epsilon", 1e-3, "float"),
            P("feature_index", fi, "dim", rank=len(shape)),
        ],
        ref,
        lambda out, want, v: _bn_cmp((out,), want, v),
    )


@gen("batch_norm_grad")
def g_batch_norm_grad(d):
    dt, shape, fi, c, x, scale, mean, var = _bn_inputs(d)
    g = d.operand(dt, shape, extremes=False)

    def ref(v):
        dt, (x, s, m, va, g), fi, e = _bn_compute(
            v, ["operand", "scale", "mean", "variance", "grad_output"]
        )
        reject_unless(g.shape == x.shape and all(t.shape == (x.shape[fi],) for t in (s, m, va)))
        with np.errstate(all="ignore"):
            return [(r, dt) for r in batch_norm_grad_reference(x, s, m, va, g, e, fi)]

    return Case(
        "batch_norm_grad",
        [
            P("operand", x, "tensor"),
            P("scale", scale, "tensor"),
            P("mean", mean, "tensor"),
            P("variance", var, "tensor"),
            P("grad_output", g, "tensor"),
            P("epsilon", 1e-3, "float"),
            P("feature_index", fi, "dim", rank=len(shape)),
        ],
        ref,
        _bn_cmp,
    )


# ---------------------------------------------------------------------------------------
# Indexing (references: xops.ops.indexing.gather_reference / scatter_reference, and the
# case generators of tests/test_indexing.py)
# ---------------------------------------------------------------------------------------


def _retyped(d, arr):
    dt = d.dtype([x for x in ALL if x.kind != "bool"], kernel=True)
    if dt.kind in ("si", "ui"):
        a = np.clip(np.round(arr * 3), dt.min, min(dt.max, 100)).astype(np.int64)
        return xo.tensor(a, dt) if not d.edge else d.wrap(np.asarray(xo.tensor(a, dt)), dt)
    return d.wrap(from_f64(arr.astype(np.float64), dt), dt)


_GATHER_ATTRS = [
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "index_vector_dim",
    "slice_sizes",
    "operand_batching_dims",
    "start_indices_batching_dims",
]
_KIND = {"index_vector_dim": "dim", "slice_sizes": "ints"}


@gen("gather")
def g_gather(d):
    operand, si, attrs = TI._gather_case(d.int(0, 10**6))
    x = _retyped(d, operand)
    params = [P("operand", x, "tensor"), P("start_indices", xo.tensor(si), "tensor")]
    params += [
        P(k, attrs[k], _KIND.get(k, "dims"), kw="batching" in k, rank=operand.ndim)
        for k in _GATHER_ATTRS
    ]
    return Case("gather", params, lib(gather_reference))


_SCATTER_ATTRS = [
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "input_batching_dims",
    "scatter_indices_batching_dims",
]


@gen("scatter")
def g_scatter(d):
    operand, si, upd, attrs = TI._scatter_case(d.int(0, 10**6))
    dt = d.dtype([x for x in ALL if x.kind in ("si", "ui", "float")])

    def conv(a):
        if dt.kind == "float":
            return xo.tensor(from_f64(a.astype(np.float64), dt), dt)
        return xo.tensor(np.clip(np.round(a * 3), dt.min, min(dt.max, 100)).astype(np.int64), dt)

    body = d.choice([xo.add, xo.maximum, lambda a, b: b])
    params = [
        P("inputs", conv(operand), "tensor"),
        P("scatter_indices", xo.tensor(si), "tensor"),
        P("updates", conv(upd), "tensor"),
    ]
    params += [P(k, attrs[k], _KIND.get(k, "dims"), rank=operand.ndim) for k in _SCATTER_ATTRS[:4]]
    params += [P("update_computation", body, "body", kw=True)]
    params += [P(k, attrs[k], "dims", kw=True, rank=operand.ndim) for k in _SCATTER_ATTRS[4:]]
    return Case(
        "scatter",
        params,
        lib_f32(scatter_reference, ["inputs", "updates"], ["update_computation"]),
        close_cmp(lambda v: _count_scale(v, "updates"), 8),
    )


def _order_key(a, dt):
    """A sort key: totalOrder for floats (bit pattern as sign-magnitude integer), values
    for integers and booleans."""
    if dt.kind == "float":
        w = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
        u = np.ascontiguousarray(a).view(w).astype(np.uint64)
        bits = dt.np.itemsize * 8 if dt.bits >= 8 else 8
        if dt.bits < 8:  # f4/f6 holders: value bits at the bottom
            bits = dt.bits
        if dt.name == "f8E8M0FNU":
            return u.astype(object)
        sign = (u >> np.uint64(bits - 1)) & np.uint64(1)
        mag = (u & np.uint64((1 << (bits - 1)) - 1)).astype(object)
        # (FNUZ: the one NaN, 0x80, is "-0" to the sign-flip key, as XLA orders it)
        return np.where(sign == 1, -mag - 1, mag)
    if dt.kind == "complex":  # lexicographic: (real, imag), each by totalOrder
        part = DT["f32"] if dt.name == "c64" else DT["f64"]
        re = _order_key(np.ascontiguousarray(a.real), part)
        im = _order_key(np.ascontiguousarray(a.imag), part)
        return re * (1 << 70) + (im + (1 << 66))
    return exact(a, dt).astype(object)


@gen("sort")
def g_sort(d):
    dt = d.dtype([x for x in ALL if x.kind != "complex"])
    shape = d.shape(lo=1)
    dim = d.int(-len(shape), len(shape) - 1)
    keys = d.operand(dt, shape, small=not d.edge)
    desc = d.coin(0.3)
    comp = (lambda a, b, *rest: xo.compare(a, b, "GT")) if desc else None
    payload = d.coin(0.4)
    inputs = (
        [keys, xo.tensor(np.arange(math.prod(shape), dtype=np.int32).reshape(shape))]
        if payload
        else keys
    )

    def ref(v):
        ins = v["inputs"]
        seq = isinstance(ins, (list, tuple))
        xs = list(ins) if seq else [ins]
        reject_unless(len(xs) >= 1)
        hs = [holder(x) for x in xs]
        reject_unless(all(h.shape == hs[0].shape for h in hs))
        k0 = hs[0]
        dim = an_int(v["dimension"], -k0.ndim, k0.ndim - 1) if k0.ndim else None
        reject_unless(dim is not None)
        dim %= k0.ndim
        kdt = dtype_of(xs[0])
        reject_unless(v["comparator"] in (None, comp))
        key = _order_key(k0, kdt)
        if v["comparator"] is not None:
            if kdt.kind in ("float", "complex"):
                return None  # GT with NaNs is not a strict weak order: invariants only
            key = -key
        order = np.argsort(np.moveaxis(key, dim, -1), axis=-1, kind="stable")
        outs = [
            np.moveaxis(np.take_along_axis(np.moveaxis(h, dim, -1), order, -1), -1, dim) for h in hs
        ]
        res = [expect(o, dtype_of(x)) for o, x in zip(outs, xs)]
        return tuple(res) if seq else res[0]

    def cmp(out, want, v):
        if want is not None:
            agree(out, want)

    return Case(
        "sort",
        [
            P("inputs", inputs, "tensors" if payload else "tensor"),
            P("dimension", dim, "dim", rank=len(shape)),
            P("is_stable", d.coin(), "bool"),
            P("comparator", comp, "body", none_ok=True),
        ],
        ref,
        cmp,
    )


@gen("top_k")
def g_top_k(d):
    dt = d.dtype([x for x in ALL if x.kind in ("si", "ui", "float")])
    shape = d.shape(lo=1)
    k = d.int(0, shape[-1])

    def ref(v):
        x = holder(v["operand"])
        dt = dtype_of(v["operand"])
        reject_unless(dt.kind in ("si", "ui", "float", "quant") and x.ndim >= 1)
        k = an_int(v["k"], 0, x.shape[-1])
        reject_unless(isinstance(v["largest"], bool))
        key = _order_key(x, dt) if x.size else np.zeros(x.shape)
        order = np.argsort(-key if v["largest"] else key, axis=-1, kind="stable")[..., :k]
        return (
            expect(np.take_along_axis(x, order, -1), dt),
            expect(order.astype(np.int32), DT["i32"]),
        )

    return Case(
        "top_k",
        [
            P("operand", d.operand(dt, shape), "tensor"),
            P("k", k, "int"),
            P("largest", d.coin(0.8), "bool"),
        ],
        ref,
    )


# ---------------------------------------------------------------------------------------
# FFT, linear solves
# ---------------------------------------------------------------------------------------


@gen("fft")
def g_fft(d):
    t = d.choice(["FFT", "IFFT", "RFFT", "IRFFT"])
    double = d.coin()
    nd = d.int(1, 3)
    lengths = [d.int(1, 5) for _ in range(nd)]
    batch = list(d.shape(hi=1))
    if t in ("FFT", "IFFT"):
        dt, shape = DT["c128" if double else "c64"], batch + lengths
    elif t == "RFFT":
        dt, shape = DT["f64" if double else "f32"], batch + lengths
    else:
        dt, shape = DT["c128" if double else "c64"], batch + lengths[:-1] + [lengths[-1] // 2 + 1]

    def ref(v):
        x = holder(v["operand"])
        src = dtype_of(v["operand"])
        t = v["fft_type"]
        reject_unless(t in ("FFT", "IFFT", "RFFT", "IRFFT"))
        L = ints(v["fft_length"], lo=1)
        reject_unless(1 <= len(L) <= 3 and len(L) <= x.ndim)
        real_in = t == "RFFT"
        reject_unless(
            src.kind == ("float" if real_in else "complex")
            and src.name in ("f32", "f64", "c64", "c128")
        )
        tail = list(x.shape[x.ndim - len(L) :])
        if t in ("FFT", "IFFT", "RFFT"):
            reject_unless(tail == L)
        else:
            reject_unless(tail[:-1] == L[:-1] and tail[-1] == L[-1] // 2 + 1)
        double = src.name in ("f64", "c128")
        out_dt = DT[("f64" if double else "f32") if t == "IRFFT" else ("c128" if double else "c64")]
        with np.errstate(all="ignore"):
            r = fft_reference(x, t, L)
        return expect(np.asarray(r).astype(out_dt.np), out_dt)

    return Case(
        "fft",
        [
            P("operand", d.operand(dt, tuple(shape), extremes=False), "tensor"),
            P("fft_type", t, "enum"),
            P("fft_length", lengths, "ints"),
        ],
        ref,
        close_cmp(lambda v: _maxabs(v["operand"]) * 64, 64),
    )


def _maybe(cmp):
    """cmp, except where the reference checks invariants only (returns None)."""

    def c(out, want, v):
        if want is not None:
            cmp(out, want, v)

    return c


def _batched(fn, *arrays):
    """Apply a one-matrix reference over the leading (batch) dims."""
    batch = arrays[0].shape[:-2]
    outs = [fn(*[a[i] for a in arrays]) for i in np.ndindex(*batch)]
    if not outs:
        return None
    return np.stack(outs).reshape(batch + outs[0].shape)


@gen("cholesky")
def g_cholesky(d):
    dt = d.dtype([DT["f32"], DT["f64"], DT["c64"], DT["c128"]])
    n = d.dim(0, 4)
    batch = d.shape(hi=1, dhi=2)
    b = d.rng.standard_normal(batch + (n, n))
    if dt.kind == "complex":
        b = b + 1j * d.rng.standard_normal(batch + (n, n))
    a = b @ np.conj(np.swapaxes(b, -1, -2)) + n * np.eye(n)
    lower = d.coin()

    def ref(v):
        a = holder(v["a"])
        dt = dtype_of(v["a"])
        if dt.kind == "quant" or dt.name == "f8E8M0FNU":
            return None  # dequantize -> cholesky -> quantize; no zero/negatives: invariants
        reject_unless(
            dt.kind in ("float", "complex") and a.ndim >= 2 and a.shape[-1] == a.shape[-2]
        )
        reject_unless(isinstance(v["lower"], bool))
        with np.errstate(all="ignore"):
            r = _batched(lambda m: cholesky_reference(exact(m, dt), v["lower"]), a)
        return expect(np.zeros(a.shape, dt.np) if r is None else from_f64(r, dt), dt)

    def cmp(out, want, v):
        """A matrix that is not positive definite gives NaNs (docs: XLA's behaviour):
        where the reference meets one, the whole matrix is NaN; elsewhere values."""
        if want is None:
            return
        w = np.asarray(want[1])
        wc = w.astype(np.complex128)
        # (a zero pivot is not positive definite either: XLA's NaNs there too)
        bad = np.isnan(wc).any(axis=(-1, -2)) | (np.diagonal(wc, 0, -2, -1) == 0).any(axis=-1)
        if w.size and bad.any():
            g = np.asarray(out).astype(np.complex128)
            assert np.isnan(g[bad]).all(), "a non-positive-definite matrix is not all NaN"
            w = w.copy()
            w[bad] = np.asarray(out)[bad]
            want = expect(w, want[2])
        close_cmp(lambda v: _maxabs(v["a"]) * 8, 256)(out, want, v)

    return Case(
        "cholesky",
        [P("a", d.wrap(a.astype(dt.np), dt), "tensor"), P("lower", lower, "bool")],
        ref,
        cmp,
    )


@gen("triangular_solve")
def g_triangular_solve(d):
    dt = d.dtype([DT["f32"], DT["f64"], DT["c64"], DT["c128"]])
    n, m = d.dim(0, 4), d.dim(0, 3)
    batch = d.shape(hi=1, dhi=2)
    left = d.coin()
    a = d.rng.uniform(-1, 1, batch + (n, n))
    a[..., range(n), range(n)] = d.rng.uniform(2, 4, n) * d.rng.choice([-1, 1], n)
    bshape = batch + ((n, m) if left else (m, n))
    b = d.rng.uniform(-2, 2, bshape)
    if dt.kind == "complex":
        a = a + 0.3j * d.rng.uniform(-1, 1, a.shape)
        b = b + 1j * d.rng.uniform(-1, 1, bshape)

    def ref(v):
        A, B = holder(v["a"]), holder(v["b"])
        dt = same_types([v["a"], v["b"]])
        if dt.kind == "quant":
            return None  # dequantize -> solve -> quantize: invariants only
        reject_unless(dt.kind in ("float", "complex"))
        reject_unless(A.ndim >= 2 and A.ndim == B.ndim and A.shape[:-2] == B.shape[:-2])
        reject_unless(
            A.shape[-1] == A.shape[-2]
            and A.shape[-1] == (B.shape[-2] if v["left_side"] else B.shape[-1])
        )
        reject_unless(all(isinstance(v[k], bool) for k in ("left_side", "lower", "unit_diagonal")))
        reject_unless(v["transpose_a"] in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"))
        r = _batched(
            lambda x, y: triangular_solve_reference(
                exact(x, dt),
                exact(y, dt),
                v["left_side"],
                v["lower"],
                v["unit_diagonal"],
                v["transpose_a"],
            ),
            A,
            B,
        )
        return expect(np.zeros(B.shape, dt.np) if r is None else from_f64(r, dt), dt)

    return Case(
        "triangular_solve",
        [
            P("a", d.wrap(a.astype(dt.np), dt), "tensor"),
            P("b", d.wrap(b.astype(dt.np), dt), "tensor"),
            P("left_side", left, "bool"),
            P("lower", d.coin(), "bool"),
            P("unit_diagonal", d.coin(0.3), "bool"),
            P("transpose_a", d.choice(["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]), "enum"),
        ],
        ref,
        _maybe(close_cmp(lambda v: 64 * _maxabs(v["b"]), 256)),
    )
