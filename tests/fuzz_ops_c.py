"""Fuzz generators, part 3: random numbers and control flow.

Random ops are checked by their contract (shape, type, range, determinism: the same
state or seed gives the same bits); control flow against plain Python."""

import math

import numpy as np
from fuzz_core import (
    ALL,
    DT,
    FLOATS,
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
from fuzz_ops_a import an_int, gen, ints, same_types

import xops as xo


def _shape_ok(v, key="shape"):
    shp = ints(v[key], lo=0)
    reject_unless(math.prod(shp) <= 10**6)
    return shp


@gen("rng_bit_generator")
def g_rng_bit_generator(d):
    alg = d.choice(["DEFAULT", "THREE_FRY", "PHILOX"])
    n = 3 if alg == "PHILOX" and d.coin() else 2
    state = xo.tensor(d.rng.integers(0, 2**63, n, dtype=np.uint64), "ui64")
    dt = d.dtype([x for x in ALL if x.kind in ("si", "ui", "float")], kernel=False)
    shape = list(d.shape())

    def ref(v):
        reject_unless(v["rng_algorithm"] in ("DEFAULT", "THREE_FRY", "PHILOX"))
        s = v["initial_state"]
        reject_unless(dtype_of(s) == DT["ui64"] and holder(s).ndim == 1)
        reject_unless(
            holder(s).shape[0] == 2
            or (holder(s).shape[0] == 3 and v["rng_algorithm"] != "THREE_FRY")
        )
        return xo.as_dtype(v["dtype"]), _shape_ok(v), holder(s).shape

    def cmp(out, want, v):
        dt, shp, sshape = want
        st, bits = out
        assert st.dtype == DT["ui64"] and st.shape == sshape
        assert bits.dtype == dt and list(bits.shape) == shp
        st2, bits2 = xo.rng_bit_generator(
            v["rng_algorithm"], v["initial_state"], v["shape"], v["dtype"]
        )
        agree((st2, bits2), (st, bits))  # deterministic (bit for bit)

    return Case(
        "rng_bit_generator",
        [
            P("rng_algorithm", alg, "enum"),
            P("initial_state", state, "tensor"),
            P("shape", shape, "shape"),
            P("dtype", dt, "dtype"),
        ],
        ref,
        cmp,
    )


def _range_cmp(out, want, v):
    dt, shp, lo, hi, dist = want
    assert out.dtype == dt and list(out.shape) == shp, f"{out.type} != {dt.name}{shp}"
    x = np.asarray(out).astype(dt.compute if dt.is_narrow else dt.np)
    if dist == "UNIFORM" and x.size:
        assert np.all((x >= lo) & (x < hi)), f"values outside [{lo}, {hi}): {x.min()} {x.max()}"
    if dist == "NORMAL":
        assert not np.isnan(x).any()


def _rng_ref(v, a, b, dist):
    reject_unless(dist in ("UNIFORM", "NORMAL"))
    A, B = v[a], v[b]
    if isinstance(A, float) and isinstance(B, float):
        dt = DT["f32"]
        lo, hi = A, B
    else:
        reject_unless(not isinstance(A, (int, float)) or not isinstance(B, (int, float)))
        dt = dtype_of(A if isinstance(A, (xo.Tensor, np.ndarray)) else B)
        ha = holder(A) if isinstance(A, (xo.Tensor, np.ndarray)) else np.asarray(A)
        hb = holder(B) if isinstance(B, (xo.Tensor, np.ndarray)) else np.asarray(B)
        reject_unless(ha.shape == () and hb.shape == ())
        for x in (A, B):
            reject_unless(not isinstance(x, (xo.Tensor, np.ndarray)) or dtype_of(x) == dt)
        lo, hi = float(ha.astype(np.float64)), float(hb.astype(np.float64))
    reject_unless(dt.kind in (("si", "ui", "float") if dist == "UNIFORM" else ("float",)))
    reject_unless(lo < hi if dist == "UNIFORM" else hi >= 0)
    return dt, _shape_ok(v), lo, hi, dist


def _bounds(d, dt):
    if dt.kind == "float":
        a = float(d.int(-3, 2))
        return xo.tensor(a, dt), xo.tensor(a + d.choice([0.5, 1.0, 4.0]), dt)
    a = d.int(max(dt.min, -5), min(dt.max - 1, 5))
    return xo.tensor(a, dt), xo.tensor(d.int(a + 1, min(dt.max, a + 10)), dt)


@gen("rng")
def g_rng(d):
    dist = d.choice(["UNIFORM", "NORMAL"])
    dt = d.dtype(
        [x for x in ALL if x.kind in (("si", "ui", "float") if dist == "UNIFORM" else ("float",))],
        kernel=False,
    )
    if dt.name == "f8E8M0FNU":
        dt = DT["f32"]
    a, b = _bounds(d, dt)
    if dist == "NORMAL":  # (mu, sigma): sigma >= 0
        b = xo.tensor(d.choice([0.0, 0.5, 2.0]), dt)
    return Case(
        "rng",
        [
            P("a", a, "tensor"),
            P("b", b, "tensor"),
            P("shape", list(d.shape()), "shape"),
            P("rng_distribution", dist, "enum"),
        ],
        lambda v: _rng_ref(v, "a", "b", v["rng_distribution"]),
        _range_cmp,
    )


@gen("rng_uniform")
def g_rng_uniform(d):
    dt = d.dtype(
        [x for x in ALL if x.kind in ("si", "float") and x.name != "f8E8M0FNU"], kernel=False
    )
    a, b = _bounds(d, dt) if d.coin(0.7) else (0.0, 1.0)
    return Case(
        "rng_uniform",
        [P("a", a, "tensor"), P("b", b, "tensor"), P("shape", list(d.shape()), "shape")],
        lambda v: _rng_ref(v, "a", "b", "UNIFORM"),
        _range_cmp,
        names=("rng",),
    )


@gen("rng_normal")
def g_rng_normal(d):
    dt = d.dtype([x for x in FLOATS if x.name != "f8E8M0FNU"], kernel=False)
    mu, sigma = (xo.tensor(0.5, dt), xo.tensor(2.0, dt)) if d.coin(0.7) else (0.0, 1.0)
    return Case(
        "rng_normal",
        [P("mu", mu, "tensor"), P("sigma", sigma, "tensor"), P("shape", list(d.shape()), "shape")],
        lambda v: _rng_ref(v, "mu", "sigma", "NORMAL"),
        _range_cmp,
        names=("rng",),
    )


@gen("random_seed")
def g_random_seed(d):
    seed = d.int(0, 2**40)

    def cmp(out, want, v):
        assert out is None
        a = xo.rng_uniform(0.0, 1.0, [4])
        xo.random_seed(v["seed"])
        b = xo.rng_uniform(0.0, 1.0, [4])
        xo.random_seed(v["seed"])
        c = xo.rng_uniform(0.0, 1.0, [4])
        agree(b, c)
        del a

    def ref(v):
        an_int(v["seed"])

    case = Case("random_seed", [P("seed", seed, "int", huge_ok=True, neg_ok=True)], ref, cmp)
    case.extra["result_not_tensor"] = True
    return case


# ---------------------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------------------


def _counter(d):
    dt = d.choice([DT["i32"], DT["i64"]])
    return xo.tensor(d.int(0, 3), dt), xo.tensor(d.int(0, 6), dt)


@gen("while_")
def g_while(d):
    i0, n = _counter(d)
    x = d.operand(d.dtype([DT["f32"], DT["i32"], DT["f64"]], kernel=False), d.shape(hi=2))

    def cond(i, acc):
        return xo.compare(i, n, "LT")

    def body(i, acc):
        return xo.add(i, 1), xo.add(acc, acc)

    def ref(v):
        op = v["operand"]
        reject_unless(isinstance(op, tuple) and len(op) == 2 and v["cond"] is cond)
        i, acc = int(holder(op[0])), holder(op[1])
        if v["body"] is not body:  # a mutated body: fine only while it never runs
            reject_unless(i >= int(n.item()), "the body runs")
        dt = dtype_of(op[1])
        reject_unless(dtype_of(op[0]) == dtype_of(n))
        while i < int(n.item()):
            i += 1
            acc = acc + acc
        return (expect(np.array(i, dtype_of(op[0]).np), dtype_of(op[0])), expect(acc, dt))

    return Case(
        "while_",
        [
            P("operand", (i0, x), "any"),
            P("cond", cond, "body"),
            P("body", body, "body", lenient=True),
        ],
        ref,
    )


def _branch_value(d):
    return d.operand(d.dtype([DT["f32"], DT["i32"]], kernel=False), (2,))


@gen("if_")
def g_if(d):
    pred = xo.tensor(d.coin())
    t, f = _branch_value(d), _branch_value(d)
    f = xo.tensor(np.asarray(f), dtype_of(t)) if dtype_of(f) != dtype_of(t) else f
    true_branch, false_branch = (lambda: t), (lambda: f)

    def ref(v):  # only the branch taken runs (eager: the other's types are not known)
        p = v["pred"]
        reject_unless(isinstance(p, (xo.Tensor, bool, np.bool_, np.ndarray)))
        if not isinstance(p, bool):
            reject_unless(dtype_of(p) == DT["i1"] and holder(p).shape == ())
        taken = (
            v["true_branch"]
            if bool(holder(p) if not isinstance(p, bool) else p)
            else v["false_branch"]
        )
        reject_unless(
            callable(taken) and callable(v["true_branch"]) and callable(v["false_branch"])
        )
        if taken is true_branch or taken is false_branch:
            x = taken()
            return expect(holder(x), dtype_of(x))
        try:
            return taken()
        except TypeError:
            raise Reject("arity") from None

    return Case(
        "if_",
        [
            P("pred", pred, "tensor"),
            P("true_branch", true_branch, "body", lenient=True),
            P("false_branch", false_branch, "body", lenient=True),
        ],
        ref,
        _any_cmp,
    )


def _any_cmp(out, want, v):
    """Results of a user computation: the same structure of tensors."""
    if want is None:
        return
    if isinstance(want, tuple) and not isinstance(want, type(expect(0, DT["f32"]))):
        assert isinstance(out, tuple) and len(out) == len(want)
        for o, w in zip(out, want):
            _any_cmp(o, w, v)
    elif isinstance(want, (xo.Tensor, np.ndarray)):
        agree(out, expect(holder(want), dtype_of(want)))
    else:
        agree(out, want)


@gen("case")
def g_case(d):
    vals = [_branch_value(d) for _ in range(d.int(1, 3))]
    dt = dtype_of(vals[0])
    vals = [xo.tensor(np.asarray(v), dt) for v in vals]
    index = xo.tensor(d.int(-1, len(vals)), "i32")
    branches = [(lambda v=v: v) for v in vals]

    def ref(v):
        i = v["index"]
        if isinstance(i, xo.Tensor):
            reject_unless(i.dtype == DT["i32"] and i.ndim == 0)
            i = int(i.item())
        else:
            i = an_int(i)
        bs = v["branches"]
        reject_unless(isinstance(bs, (list, tuple)) and len(bs) >= 1 and bs == branches[: len(bs)])
        k = i if 0 <= i < len(bs) else len(bs) - 1
        return expect(holder(vals[k]), dt)

    return Case("case", [P("index", index, "tensor"), P("branches", branches, "any")], ref)


@gen("conditional")
def g_conditional(d):
    a, b = _branch_value(d), _branch_value(d)
    pred = xo.tensor(d.coin())

    def ref(v):
        p = v["pred"]
        reject_unless(isinstance(p, xo.Tensor) and p.dtype == DT["i1"] and p.ndim == 0)
        reject_unless(callable(v["true_computation"]) and callable(v["false_computation"]))
        which = "true" if bool(p.item()) else "false"
        fn, x = v[f"{which}_computation"], v[f"{which}_operand"]
        if fn is not (xo.negate if which == "true" else xo.abs):
            try:  # a mutated computation: conditional returns what it returns
                return fn(x)
            except TypeError:
                raise Reject("arity") from None
        dt = dtype_of(x)
        if dt.kind == "quant":
            return None  # dequantize -> op -> quantize: invariants only
        reject_unless(dt.kind in ("si", "ui", "float") and (which == "true" or dt.kind != "ui"))
        with np.errstate(over="ignore"):
            return expect((np.negative if which == "true" else np.abs)(holder(x)), dt)

    # (only the chosen computation runs, on its operand: the other operand is not read)
    return Case(
        "conditional",
        [
            P("pred", pred, "tensor"),
            P("true_operand", a, "tensor", lenient=True),
            P("true_computation", xo.negate, "body", lenient=True),
            P("false_operand", b, "tensor", lenient=True),
            P("false_computation", xo.abs, "body", lenient=True),
        ],
        ref,
        _any_cmp,
        names=("negate", "abs"),
    )  # (computations check their operand)


@gen("call")
def g_call(d):
    xs = [_branch_value(d) for _ in range(d.int(1, 2))]
    dt = dtype_of(xs[0])
    xs = [xo.tensor(np.asarray(x), dt) for x in xs]
    fn = xo.negate if len(xs) == 1 else xo.add

    def ref(v):  # call(f, *xs) is f(*xs) (xops label I2: as many operands as parameters)
        f = v["computation"]
        reject_unless(callable(f))
        if f is xo.negate or f is xo.add:
            reject_unless(len(v["operands"]) == (1 if f is xo.negate else 2))
            hs = [holder(x) for x in v["operands"]]
            dts = [dtype_of(x) for x in v["operands"]]
            reject_unless(all(t == dts[0] for t in dts) and all(h.shape == hs[0].shape for h in hs))
            reject_unless(dts[0].kind in ("si", "ui", "float"))
            r = np.negative(hs[0]) if len(hs) == 1 else hs[0] + hs[1]
            return expect(r.astype(dts[0].np), dts[0])
        try:
            return f(*v["operands"])  # a mutated computation: it must be what call returns
        except TypeError:
            raise Reject("arity") from None

    def cmp(out, want, v):
        if isinstance(want, tuple) and not isinstance(want, type(expect(0, DT["f32"]))):
            assert isinstance(out, tuple) and len(out) == len(want)
            for o, w in zip(out, want):
                agree(o, w)
        else:
            agree(out, want)

    return Case(
        "call", [P("computation", fn, "body", lenient=True), P("operands", xs, "varargs")], ref, cmp
    )


def _twice(x):
    return xo.add(x, x)


def _total(*xs):
    if not xs:
        return xo.tensor(0.0)
    out = xs[0]
    for x in xs:
        out = xo.add(out, x)
    return out


xo.register_custom_call("fuzz_total", _total)


@gen("custom_call")
def g_custom_call(d):
    dt = d.dtype([DT["f32"], DT["f64"]], kernel=False)
    shape = d.shape(hi=2)
    xs = [d.operand(dt, shape) for _ in range(d.int(1, 2))]

    def ref(v):  # the target x0 + x0 + x1 + ... on the inputs
        reject_unless(v["call_target_name"] == "fuzz_total")
        if not v["inputs"]:
            return expect(np.float32(0.0), DT["f32"])
        reject_unless(
            isinstance(v["has_side_effect"], (bool, type(None)))
            and isinstance(v["backend_config"], str)
        )
        hs = [holder(x) for x in v["inputs"]]
        dt = same_types(v["inputs"])
        reject_unless(dt.kind == "float" and all(h.shape == hs[0].shape for h in hs))
        out = hs[0].astype(dt.compute)
        for h in hs:
            out = (out + h.astype(dt.compute)).astype(dt.compute)
        if dt.is_narrow:
            return expect(from_f64(out.astype(np.float64), dt), dt)
        return expect(out.astype(dt.np), dt)

    return Case(
        "custom_call",
        [
            P("call_target_name", "fuzz_total", "enum"),
            P("inputs", xs, "varargs"),
            P("has_side_effect", d.coin(), "bool", kw=True, none_ok=True),
            P("backend_config", "", "any", kw=True),
        ],
        ref,
    )


@gen("register_custom_call")
def g_register_custom_call(d):
    name = f"fuzz_target_{d.int(0, 3)}"

    def ref(v):
        reject_unless(isinstance(v["name"], str) and (callable(v["fn"]) or v["fn"] is None))

    def cmp(out, want, v):
        if v["fn"] is None:  # the decorator form
            out(_twice)
        elif v["fn"] is not _twice:
            return  # another callable: registered as given
        x = xo.tensor([1.0, 2.0])
        agree(xo.custom_call(v["name"], x), expect(np.array([2.0, 4.0], np.float32), DT["f32"]))

    case = Case(
        "register_custom_call",
        [P("name", name, "any"), P("fn", _twice, "body", none_ok=True, lenient=True)],
        ref,
        cmp,
    )
    case.extra["result_not_tensor"] = True
    return case
