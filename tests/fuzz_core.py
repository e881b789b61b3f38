"""The fuzz harness behind tests/test_fuzz.py: calls, operands, the oracle, mutations.

A generator (``tests/fuzz_ops_*.py``) draws one *valid* call of an op as a
:class:`Case`: its parameters (:class:`P`, each with a *kind* that says how it can be
mutated), a naive reference computed from the parameters' values, and how to compare.
:func:`run_case` calls the op and applies the oracle:

* the call returns: every result satisfies the invariants (a Tensor whose holder array
  has its element type's holder dtype; quantized storage inside storage_min..max) and
  agrees with the reference computed from the *same* arguments — a reference that
  rejects the arguments (:class:`Reject`, or any error in it) means the op accepted an
  invalid call;
* the call raises :class:`xops.SpecError` whose message starts with the op's name and a
  constraint label ``name (C3): ...``; a mutation that is invalid by construction
  (``must_raise``) must raise it;
* anything else (TypeError, IndexError, numba errors, NumPy warnings, which pytest turns
  into errors) is an escape and fails the test.

:func:`mutate` applies one mutation of a class in :data:`MUTATIONS` to one parameter.
"""

import math
import re
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

import xops as xo

DT = {d.name: d for d in xo.all_dtypes()}
ALL = xo.all_dtypes()
FLOATS = [d for d in ALL if d.kind == "float"]
INTS = [d for d in ALL if d.kind in ("si", "ui")]
COMPLEX = [DT["c64"], DT["c128"]]
BOOL = [DT["i1"]]
NUMERIC = INTS + FLOATS + COMPLEX
# What a default (CI) run draws for ops on compiled kernels: the kernels the other tests
# compile anyway (f32, i64; bf16 and f8 compute in f32), plus c64 where f32 is not taken.
KERNEL_TYPES = [DT[n] for n in ("f32", "bf16", "f8E4M3FN", "i64", "c64")]


class Reject(Exception):
    """The reference's verdict: these arguments are not a valid call of the op."""


def reject_unless(cond, why="invalid"):
    if not cond:
        raise Reject(why)


@dataclass
class P:
    """One parameter of a call: its name, the value passed, its kind (for mutations),
    whether it goes by keyword, and flags for the mutations it admits."""

    name: str
    value: object
    kind: str  # tensor tensors int ints dim dims shape pairs enum bool float body dtype any
    kw: bool = False
    rank: int = 0  # for dim/dims: the rank the dimension indexes into
    none_ok: bool = False  # None is a valid value (a default)
    huge_ok: bool = False  # a huge value is still valid (e.g. reduce_precision bits)
    neg_ok: bool = False  # negative values are valid (e.g. padding)
    lenient: bool = False  # no mutation of it is invalid by construction (call's body)


@dataclass
class Case:
    op: str
    params: list
    ref: object = None  # callable(values: dict) -> expected
    cmp: object = None  # callable(out, expected, values) -> None (asserts)
    tol: float = 0.0  # generic comparison: 0 = exact (NaN-aware), else rtol
    fn: object = None  # the callable (default getattr(xo, op))
    names: tuple = ()  # other op names its messages may start with
    note: str = ""
    quantized: bool = False
    extra: dict = field(default_factory=dict)

    def values(self):
        return {p.name: p.value for p in self.params}

    def call(self):
        f = self.fn or getattr(xo, self.op)
        args = []
        for p in self.params:
            if p.kw:
                continue
            if p.kind == "varargs":
                args.extend(p.value)
            else:
                args.append(p.value)
        kwargs = {p.name: p.value for p in self.params if p.kw}
        return f(*args, **kwargs)

    def describe(self):
        parts = [f"{p.name}={short(p.value)}" for p in self.params]
        return f"xo.{self.op}({', '.join(parts)})"


def short(v):
    if isinstance(v, xo.Tensor):
        values = "" if v.size > 8 or v.dtype.kind == "quant" else v.tolist()
        return f"Tensor<{v.type}>{values}"
    if isinstance(v, np.ndarray):
        order = (
            "F"
            if v.flags.f_contiguous and v.ndim > 1
            else "C"
            if v.flags.c_contiguous
            else "strided"
        )
        return f"ndarray<{v.dtype},{v.shape},{order}>"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(short(x) for x in v[:6])
        return (
            ("[" + inner + (", ..." if len(v) > 6 else "") + "]")
            if isinstance(v, list)
            else "(" + inner + ")"
        )
    if callable(v):
        return getattr(v, "__name__", "fn")
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."


# ---------------------------------------------------------------------------------------
# Operands
# ---------------------------------------------------------------------------------------


def holder(v):
    """The holder array of an operand value (Tensor or NumPy array); Reject otherwise."""
    if isinstance(v, xo.Tensor):
        return np.asarray(v)
    if isinstance(v, (np.ndarray, np.generic)):
        try:
            xo.as_dtype(np.asarray(v).dtype)
        except TypeError:
            raise Reject("not an element type") from None
        return np.ascontiguousarray(v) if np.ndim(v) else np.asarray(v).copy()
    raise Reject(f"not a tensor: {type(v).__name__}")


def dtype_of(v):
    if isinstance(v, xo.Tensor):
        return v.dtype
    if isinstance(v, (np.ndarray, np.generic)):
        try:
            return xo.as_dtype(np.asarray(v).dtype)
        except TypeError:
            raise Reject("not an element type") from None
    raise Reject(f"not a tensor: {type(v).__name__}")


def exact(a, dt):
    """Values of a holder array as float64 / complex128 / int (object for 64-bit ints)."""
    a = np.asarray(a)
    if dt.kind == "quant":
        return a.astype(np.int64)
    if dt.kind in ("float",):
        with np.errstate(invalid="ignore"):
            return a.astype(np.float64)
    if dt.kind == "complex":
        return a.astype(np.complex128)
    if dt.kind == "bool":
        return a.astype(np.bool_)
    return a.astype(np.uint64 if dt.kind == "ui" else np.int64)


def from_f64(x, dt):
    """float64/complex/int values -> holder array of ``dt``, rounded once (xops' own
    tensor() conversion, which tests/test_dtypes.py checks against ml_dtypes)."""
    return np.asarray(xo.tensor(np.asarray(x), dt))


def float_values(rng, dt, n, edge, lo=-4.0, hi=4.0, extremes=True):
    x = rng.uniform(lo, hi, n)
    if edge and n:
        fi = ml_dtypes.finfo(dt.np) if dt.is_narrow else np.finfo(dt.np)
        specials = [np.nan, 0.0, -0.0, float(fi.smallest_normal), float(fi.smallest_subnormal)]
        if extremes:
            specials += [np.inf, -np.inf, float(fi.max), -float(fi.max)]
        k = rng.integers(0, n + 1)
        x[rng.integers(0, n, k)] = rng.choice(specials, k)
    return x


def int_values(rng, dt, n, edge, small=False):
    lo, hi = (max(dt.min, -6), min(dt.max, 6)) if small else (dt.min, dt.max)
    if not edge:
        lo, hi = max(lo, -20), min(hi, 20)
    wide = np.uint64 if dt.kind == "ui" else np.int64
    v = rng.integers(lo, hi, n, endpoint=True, dtype=wide)
    if edge and n:
        ext = [dt.min, dt.max, 0, min(dt.max, 1), max(dt.min, -1) if dt.kind == "si" else 0]
        k = rng.integers(0, n + 1)
        v[rng.integers(0, n, k)] = rng.choice(np.array(ext, wide), k)
    return v


def values(rng, dt, shape, edge=False, small=False, lo=-4.0, hi=4.0, extremes=True):
    """A holder array of element type ``dt`` and ``shape``."""
    n = math.prod(shape)
    if dt.kind == "quant":
        v = int_values(rng, dt.storage_type, n, edge, small)
        v = np.clip(v, dt.storage_min, dt.storage_max)
        return v.astype(dt.storage_type.np).reshape(shape)
    if dt.kind == "bool":
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    if dt.kind in ("si", "ui"):
        return int_values(rng, dt, n, edge, small).astype(dt.np).reshape(shape)
    if dt.kind == "float":
        if small:
            lo, hi = -3.0, 3.0
        if dt.name == "f8E8M0FNU":
            lo, hi = 0.01, 8.0
        return from_f64(float_values(rng, dt, n, edge, lo, hi, extremes), dt).reshape(shape)
    part = DT["f32"] if dt.name == "c64" else DT["f64"]
    z = np.empty(n, dt.np)
    z.real = float_values(rng, part, n, edge, lo, hi, extremes)
    z.imag = float_values(rng, part, n, edge, lo, hi, extremes)
    return z.reshape(shape)


def layout(rng, arr, dt, edge):
    """The holder array passed as a Tensor or, in edge mode, as a C-, Fortran-ordered or
    non-contiguous NumPy array (quantized values always as Tensors)."""
    k = int(rng.integers(0, 4)) if edge else 0
    if dt.kind == "quant" or k == 0:
        return xo.tensor(arr, dt)
    if k == 1 or arr.ndim == 0:
        return arr.copy()
    if k == 2:
        return np.asfortranarray(arr)
    wide = np.repeat(arr, 2, axis=-1)
    return wide[..., ::2]  # a strided view


# ---------------------------------------------------------------------------------------
# Oracle
# ---------------------------------------------------------------------------------------


def flat_results(out):
    if isinstance(out, (tuple, list)) and not isinstance(out, Expect):
        r = []
        for o in out:
            r += flat_results(o)
        return r
    return [out]


def check_invariants(out):
    """Every Tensor in ``out``: holder dtype of its element type, read-only storage;
    quantized storage values inside storage_min..max."""
    for t in flat_results(out):
        if isinstance(t, xo.Token):
            continue
        assert isinstance(t, xo.Tensor), f"result is a {type(t).__name__}, not a Tensor"
        a = np.asarray(t)
        dt = t.dtype
        assert isinstance(dt, xo.DType), f"dtype {dt!r}"
        if dt.kind == "quant":
            assert a.dtype == dt.storage_type.np, (
                f"quantized storage dtype {a.dtype} != {dt.storage_type.np} ({dt.name})"
            )
            if a.size:
                assert dt.storage_min <= int(a.min()) and int(a.max()) <= dt.storage_max, (
                    f"storage values [{a.min()}, {a.max()}] outside [{dt.storage_min}, "
                    f"{dt.storage_max}]"
                )
        else:
            assert a.dtype == dt.np, f"holder dtype {a.dtype} != {dt.np} for {dt.name}"
        assert not a.flags.writeable, "result storage is writeable"


class Expect(tuple):
    """An expected result ``("expect", holder array, element type)``: a leaf."""


def expect(arr, dt):
    """An expected result: holder array + element type."""
    return Expect(("expect", np.asarray(arr), dt))


def _as_expected(w):
    if isinstance(w, xo.Tensor):
        return np.asarray(w), w.dtype
    if isinstance(w, Expect):
        return w[1], w[2]
    raise AssertionError(f"bad expected value {w!r}")


def agree(out, want, tol=0.0, atol=0.0):
    """``out`` (Tensor or tuple) equals ``want`` (same structure of Tensors / expect()):
    dtype, shape, and values — exact (NaN where NaN, signed zeros) or within rtol."""
    outs, wants = flat_results(out), flat_results(want)
    assert len(outs) == len(wants), f"{len(outs)} results, want {len(wants)}"
    for i, (o, w) in enumerate(zip(outs, wants)):
        if w is None:
            continue
        if isinstance(w, xo.Token):
            assert isinstance(o, xo.Token), f"result #{i}: {type(o).__name__}, want a Token"
            continue
        wa, wdt = _as_expected(w)
        assert isinstance(o, xo.Tensor), f"result #{i} is a {type(o).__name__}"
        assert o.dtype == wdt, f"result #{i}: element type {o.dtype.name} != {wdt.name}"
        g = np.asarray(o)
        assert g.shape == wa.shape, f"result #{i}: shape {g.shape} != {wa.shape}"
        ge, we = exact(g, wdt), exact(wa.astype(g.dtype) if wa.dtype != g.dtype else wa, wdt)
        if wdt.kind in ("float", "complex"):
            _agree_inexact(ge, we, tol, atol, i)
        else:
            bad = np.flatnonzero((ge != we).reshape(-1))
            assert bad.size == 0, (
                f"result #{i}: {bad.size} mismatches, first at {bad[0]}: "
                f"{ge.reshape(-1)[bad[0]]} != {we.reshape(-1)[bad[0]]}"
            )


def _agree_inexact(g, w, tol, atol, i):
    parts = (g.real, w.real), (g.imag, w.imag) if np.iscomplexobj(g) else ((g, w),)
    if not np.iscomplexobj(g):
        parts = ((g, w),)
    for gp, wp in parts:
        gn, wn = np.isnan(gp), np.isnan(wp)
        bad = np.flatnonzero((gn != wn).reshape(-1))
        assert bad.size == 0, (
            f"result #{i}: NaN mismatch at {bad[0]}: got "
            f"{gp.reshape(-1)[bad[0]]} want {wp.reshape(-1)[bad[0]]}"
        )
        m = ~wn
        gp, wp = gp[m], wp[m]
        if tol == 0 and atol == 0:
            bad = np.flatnonzero((gp != wp) | (np.signbit(gp) != np.signbit(wp)))
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                inf = np.isinf(wp)
                bad = np.flatnonzero(
                    (inf & (gp != wp)) | (~inf & ~(np.abs(gp - wp) <= atol + tol * np.abs(wp)))
                )
        assert bad.size == 0, (
            f"result #{i}: {bad.size} values differ, e.g. got "
            f"{gp[bad[0]]!r} want {wp[bad[0]]!r} (rtol {tol}, atol {atol})"
        )


LABEL = re.compile(r"^(?P<op>[\w.]+(?: [\w.]+)?) \((?P<label>[^()]+)\): ")


def check_spec_error(e, case):
    """A SpecError names the op (or one of the case's other names) and a constraint."""
    msg = str(e)
    m = LABEL.match(msg)
    assert m, f"SpecError without 'op (label): ' prefix: {msg!r}"
    names = {case.op, case.op.rstrip("_"), *case.names}
    assert m.group("op") in names, (
        f"SpecError names {m.group('op')!r}, not {sorted(names)}: {msg!r}"
    )
    return m.group("label")


class Outcome:
    """Counts of what the calls gave (reported by test_fuzz's summary)."""

    counts = {"calls": 0, "valid-and-correct": 0, "SpecError": 0, "mutations": 0}
    classes = set()
    ops = set()
    labels = {}


def run_case(case, must_raise=False, must_pass=False, what=""):
    """Call the op and apply the oracle; returns "ok" or "spec" (raises on a failure)."""
    Outcome.counts["calls"] += 1
    Outcome.ops.add(case.op)
    try:
        out = case.call()
    except xo.SpecError as e:
        label = check_spec_error(e, case)
        assert not must_pass, f"{case.describe()}: a valid call raised {e}"
        Outcome.counts["SpecError"] += 1
        Outcome.labels[label] = Outcome.labels.get(label, 0) + 1
        return "spec"
    except AssertionError:
        raise
    except BaseException as e:  # an escape: anything but SpecError
        raise AssertionError(f"{case.describe()}{what}: escaped {type(e).__name__}: {e}") from e
    assert not must_raise, (
        f"{case.describe()}{what}: accepted an invalid call, returned "
        f"{short(out) if not isinstance(out, xo.Tensor) else out.type}"
    )
    try:
        if not case.extra.get("result_not_tensor"):
            check_invariants(out)
        if case.ref is None and case.cmp is not None:
            case.cmp(out, None, case.values())
        elif case.ref is not None:
            try:
                with np.errstate(all="ignore"):  # the reference's own IEEE results
                    want = case.ref(case.values())
            except xo.SpecError as r:
                raise AssertionError(f"accepted arguments the reference rejects ({r})") from None
            except Reject as r:
                raise AssertionError(f"accepted arguments the reference rejects ({r})") from None
            if case.cmp is not None:
                case.cmp(out, want, case.values())
            else:
                agree(out, want, case.tol)
    except AssertionError as e:
        raise AssertionError(f"{case.describe()}{what}: {e}") from None
    Outcome.counts["valid-and-correct"] += 1
    return "ok"


# ---------------------------------------------------------------------------------------
# Mutations: one change to one parameter of a valid call
# ---------------------------------------------------------------------------------------

HUGE = [2**40, 2**62, 2**63 - 1, 2**64, 10**30]
BAD_TYPES = ["x", {"a": 1}, object(), b"\x01", [[1.0], [2.0, 3.0]]]

# class -> the parameter kinds it applies to
MUTATIONS = {
    "rank+1": ("tensor",),
    "rank-1": ("tensor",),
    "dim-length": ("tensor",),
    "element-type": ("tensor", "dtype"),
    "operand-python-type": ("tensor", "tensors"),
    "quantized-operand": ("tensor",),
    "operand-count": ("tensors", "varargs"),
    "negative-attr": ("int", "ints", "dim", "dims", "shape", "pairs"),
    "huge-attr": ("int", "ints", "dim", "dims", "shape", "pairs"),
    "attr-length": ("ints", "dims", "shape", "pairs"),
    "float-attr": ("int", "ints", "dim", "dims", "shape", "pairs"),
    "none-attr": (
        "int",
        "ints",
        "dim",
        "dims",
        "shape",
        "pairs",
        "enum",
        "bool",
        "float",
        "dtype",
        "body",
    ),
    "str-attr": ("int", "ints", "dim", "dims", "shape", "pairs", "bool", "float", "body"),
    "nested-attr": ("int", "ints", "dims", "shape", "dim"),
    "tensor-attr": ("dtype", "enum", "body"),
    "dim-out-of-range": ("dim", "dims"),
    "duplicate-dims": ("dims",),
    "unknown-enum": ("enum", "dtype"),
    "bad-bool": ("bool",),
    "bad-body": ("body",),
}


def mutation_classes_for(case):
    out = []
    for cls, kinds in MUTATIONS.items():
        if any(p.kind in kinds for p in case.params):
            out.append(cls)
    return out


def _other_dtype(rng, dt):
    pool = [d for d in ALL if d is not dt]
    return pool[int(rng.integers(len(pool)))]


def _retype(v, dt):
    """The operand's values in another element type (as xo.tensor converts them)."""
    a = holder(v)
    src = dtype_of(v)
    if src.kind == "quant":
        a = a.astype(np.int64)
    elif src.is_narrow:
        a = a.astype(src.compute)
    with np.errstate(all="ignore"):
        if dt.kind in ("si", "ui") and a.dtype.kind in "fc":
            a = np.nan_to_num(np.real(a)).clip(-100, 100).astype(np.int64)
        if dt.kind == "float" and a.dtype.kind == "c":
            a = np.real(a)
        return xo.tensor(a, dt)


def _int_mut(rng, v, cls, p):
    """Mutate an int / int-list attribute value; returns (value, must_raise)."""
    if v is None:  # an attribute left at its default: nothing to mutate
        return None, False
    seq = isinstance(v, (list, tuple)) and p.kind != "int"
    if p.kind == "pairs":
        flat = [list(x) for x in v]
        if not flat:
            return ([[0, 0]], False) if cls == "attr-length" else (None, False)
        i = int(rng.integers(len(flat)))
        j = int(rng.integers(2))
        if cls == "negative-attr":
            flat[i][j] = -int(rng.integers(1, 5))
            return flat, False
        if cls == "huge-attr":
            flat[i][j] = HUGE[int(rng.integers(len(HUGE)))]
            return flat, flat[i][j] >= 2**63 and not p.huge_ok
        if cls == "attr-length":
            return (flat + [[0, 0]] if rng.integers(2) else flat[:-1]), True
        if cls == "float-attr":
            flat[i][j] = float(flat[i][j]) + 0.5
            return flat, True
        if cls == "str-attr":
            flat[i] = "ab"
            return flat, True
        return None, False
    if seq:
        lst = list(v)
        if not lst and cls in (
            "negative-attr",
            "huge-attr",
            "float-attr",
            "str-attr",
            "nested-attr",
            "dim-out-of-range",
            "duplicate-dims",
        ):
            cls = "attr-length"
        i = int(rng.integers(len(lst))) if lst else 0
        if cls == "negative-attr":
            lst[i] = -int(rng.integers(1, 4))
            return lst, False
        if cls == "huge-attr":
            lst[i] = HUGE[int(rng.integers(len(HUGE)))]
            return lst, lst[i] >= 2**63 and not p.huge_ok
        if cls == "attr-length":
            grow = rng.integers(2) or not lst
            return (lst + [int(rng.integers(0, 3))] if grow else lst[:-1]), False
        if cls == "float-attr":
            lst[i] = float(lst[i]) + (0.5 if rng.integers(2) else 0.0)
            return lst, True
        if cls == "str-attr":
            return ("1,2" if rng.integers(2) else [str(x) for x in lst] or ["0"]), True
        if cls == "nested-attr":
            return [lst], bool(lst) or p.kind == "dim"
        if cls == "dim-out-of-range":
            lst[i] = p.rank + int(rng.integers(0, 3)) if rng.integers(2) else -p.rank - 1
            return lst, True
        if cls == "duplicate-dims":
            if len(lst) >= 1:
                return lst + [lst[0]], True
            return lst, False
        return None, False
    # a single int
    if cls == "negative-attr":
        return -int(rng.integers(1, 4)), False
    if cls == "huge-attr":
        h = HUGE[int(rng.integers(len(HUGE)))]
        return h, h >= 2**63 and not p.huge_ok
    if cls == "float-attr":
        if isinstance(v, (int, np.integer)):
            return float(v) + (0.5 if rng.integers(2) else 0.0), True
        return 1.5, True
    if cls == "str-attr":
        return str(v), True
    if cls == "nested-attr":
        return [[v]], True
    if cls == "dim-out-of-range":
        return (p.rank + int(rng.integers(0, 3)) if rng.integers(2) else -p.rank - 1), True
    return None, False


def mutate(case, cls, rng):
    """One mutation (see _mutate); None where it does not apply or cannot be built (a
    per-axis quantized operand whose scales no longer fit its new shape)."""
    try:
        with np.errstate(all="ignore"):
            return _mutate(case, cls, rng)
    except xo.SpecError:
        return None


def _mutate(case, cls, rng):
    """A copy of ``case`` with one mutation of class ``cls``; (case, must_raise) or None
    when the class does not apply."""
    cands = [i for i, p in enumerate(case.params) if p.kind in MUTATIONS[cls]]
    if not cands:
        return None
    i = cands[int(rng.integers(len(cands)))]
    p = case.params[i]
    v = p.value
    must = False
    new = None
    if p.kind == "tensor":
        if cls == "operand-python-type":
            new, must = BAD_TYPES[int(rng.integers(len(BAD_TYPES)))], True
        elif not isinstance(v, (xo.Tensor, np.ndarray)):
            return None
        elif cls == "rank+1":
            axis = int(rng.integers(np.ndim(v) + 1))
            new = xo.tensor(np.stack([holder(v)] * 2, axis=axis), dtype_of(v))
        elif cls == "rank-1":
            a = holder(v)
            if a.ndim == 0:
                a = a.reshape(1, 1)
            else:
                ax = int(rng.integers(a.ndim))
                a = (
                    np.take(a, 0, axis=ax)
                    if a.shape[ax]
                    else np.zeros(a.shape[:ax] + a.shape[ax + 1 :], a.dtype)
                )
            new = xo.tensor(a, dtype_of(v))
        elif cls == "dim-length":
            a = holder(v)
            if a.ndim == 0:
                return None
            ax = int(rng.integers(a.ndim))
            if a.shape[ax] > 0 and rng.integers(2):
                a = np.take(a, range(a.shape[ax] - 1), axis=ax)
            else:
                extra = (
                    np.take(a, [0] * 1, axis=ax)
                    if a.shape[ax]
                    else np.zeros(a.shape[:ax] + (1,) + a.shape[ax + 1 :], a.dtype)
                )
                a = np.concatenate([a, extra], axis=ax)
            new = xo.tensor(a, dtype_of(v))
        elif cls == "element-type":
            new = _retype(v, _other_dtype(rng, dtype_of(v)))
        elif cls == "quantized-operand":
            a = holder(v)
            q = xo.QuantizedType("i8", "f32", 0.5, 3)
            real = (
                exact(a, dtype_of(v)).real
                if dtype_of(v).kind == "complex"
                else exact(a, dtype_of(v))
            )
            new = xo.tensor(np.clip(np.nan_to_num(real), -100, 100).astype(np.int64), q)
    elif p.kind in ("tensors", "varargs"):
        lst = list(v) if isinstance(v, (list, tuple)) else [v]
        if cls == "operand-count":
            if lst and rng.integers(2):
                new = lst[:-1]
            else:
                new = lst + [lst[-1] if lst else xo.tensor(0.0)]
            if p.kind == "varargs":
                return _replace_varargs(case, i, new), False
        elif cls == "operand-python-type":
            if lst and rng.integers(2):
                lst[int(rng.integers(len(lst)))] = BAD_TYPES[int(rng.integers(len(BAD_TYPES)))]
                new = lst
            else:
                new = "abc"
            must = True
    elif p.kind in ("int", "ints", "dim", "dims", "shape", "pairs"):
        if cls == "none-attr":
            new, must = None, not p.none_ok
        else:
            new, must = _int_mut(rng, v, cls, p)
            if new is None:
                return None
            if (
                cls == "negative-attr"
                and p.kind == "shape"
                and isinstance(new, list)
                and any(isinstance(x, int) and x < 0 for x in new)
            ):
                must = True
    elif p.kind == "enum":
        if cls == "unknown-enum":
            new, must = "NOT_AN_ENUM_VALUE", True
        elif cls == "none-attr":
            new, must = None, not p.none_ok
        elif cls == "tensor-attr":
            new, must = xo.tensor([1, 2]), True
    elif p.kind == "dtype":
        if cls == "unknown-enum":
            new, must = ("f33" if rng.integers(2) else "!quant.uniform<i8:f32, x>"), True
        elif cls == "none-attr":
            new, must = None, not p.none_ok
        elif cls == "tensor-attr":
            new, must = xo.tensor([1.0]), True
        elif cls == "element-type":
            new = _other_dtype(rng, xo.as_dtype(v) if v is not None else DT["f32"])
    elif p.kind == "bool":
        if cls == "bad-bool":
            new, must = (2 if rng.integers(2) else "yes"), None  # may be read as a truth value
        elif cls == "none-attr":
            new, must = None, not p.none_ok
        elif cls == "str-attr":
            new, must = "true", True
    elif p.kind == "float":
        if cls == "none-attr":
            new, must = None, not p.none_ok
        elif cls == "str-attr":
            new, must = "0.1", True
    elif p.kind == "body":
        if cls == "bad-body":
            k = int(rng.integers(3))
            new = [42, (lambda *a: (a or (xo.tensor(0.0),))[:1] * 3), (lambda: xo.tensor(0.0))][k]
            must = True
        elif cls == "none-attr":
            new, must = None, not p.none_ok
        elif cls == "str-attr":
            new, must = "add", True
        elif cls == "tensor-attr":
            new, must = xo.tensor([1.0]), True
    if p.lenient:
        must = False
    if new is None and cls != "none-attr":
        return None
    params = list(case.params)
    params[i] = P(p.name, new, p.kind, p.kw, p.rank, p.none_ok, p.huge_ok, p.neg_ok, p.lenient)
    return _clone(case, params), bool(must)


def _replace_varargs(case, i, new):
    """``*args`` parameters: the list value is spread as separate positional params."""
    params = list(case.params)
    p = params[i]
    params[i] = P(p.name, new, p.kind, p.kw)
    return _clone(case, params)


def _clone(case, params):
    return Case(
        case.op,
        params,
        case.ref,
        case.cmp,
        case.tol,
        case.fn,
        case.names,
        case.note,
        case.quantized,
        dict(case.extra),
    )


# ---------------------------------------------------------------------------------------
# Drawing a call
# ---------------------------------------------------------------------------------------


class Draw:
    """What a generator draws from: a NumPy generator seeded by hypothesis, the mode
    (``edge``: special values, empty dims, every element type, NumPy layouts) and
    whether every element type may be drawn for ops on compiled kernels (``full``)."""

    def __init__(self, seed, edge=False, full=False):
        self.rng = np.random.default_rng(seed)
        self.edge = edge
        self.full = full

    def int(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)

    def choice(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def sample(self, seq, k):
        seq = list(seq)
        idx = self.rng.permutation(len(seq))[:k]
        return [seq[i] for i in sorted(idx)]

    def dtype(self, pool, kernel=True):
        """An element type from ``pool``. Ops on compiled kernels (``kernel``) draw from
        KERNEL_TYPES unless ``full`` (each new dtype x kernel is a Numba compile); other
        ops draw a representative type in valid mode and any type in edge mode."""
        pool = list(pool)
        if kernel and not self.full:
            pick = [d for d in pool if d in KERNEL_TYPES]
        elif not self.edge:
            pick = [d for d in pool if d.name in ("f32", "i32", "f64", "i64", "c64", "i1", "bf16")]
        else:
            pick = pool
        return self.choice(pick or pool)

    def dim(self, lo=0, hi=4):
        if self.edge and self.coin(0.15):
            return 0
        return self.int(max(lo, 1) if not self.edge else lo, hi)

    def shape(self, rank=None, lo=0, hi=3, dlo=1, dhi=4):
        r = self.int(lo, hi) if rank is None else rank
        return tuple(self.dim(dlo, dhi) for _ in range(r))

    def values(self, dt, shape, small=False, lo=-4.0, hi=4.0, extremes=True):
        return values(self.rng, dt, shape, self.edge, small, lo, hi, extremes)

    def wrap(self, arr, dt):
        return layout(self.rng, arr, dt, self.edge)

    def operand(self, dt, shape, **kw):
        return self.wrap(self.values(dt, shape, **kw), dt)

    def quantized(self, expressed=None, axis=None, n=1):
        st = self.choice([DT["i8"], DT["i4"], DT["ui8"], DT["i16"]])
        ex = expressed or self.choice(
            [DT["f32"], DT["bf16"], DT["f16"]] if st.bits < 16 else [DT["f32"]]
        )
        scales = [float(self.choice([0.5, 0.25, 1.0, 0.1, 2.0])) for _ in range(n)]
        zps = [self.int(max(st.min, -3), min(st.max, 3)) for _ in range(n)]
        return xo.QuantizedType(
            st,
            ex,
            scales if axis is not None else scales[0],
            zps if axis is not None else zps[0],
            axis,
        )
