"""Elementwise workloads, called as users write them (``xo.add``, ``xo.exponential``, ...).

* f32 add, multiply, exp, tanh on 1M and 16M elements (issue 15: <= 1.0x PyTorch);
* bf16 / f16 add, multiply and exp on 1M elements, with an ``xops_f32`` row: the same
  op on the same values in f32 (issue 15: the narrow type within 1.5x of xops's own
  f32 time);
* the integer ops with the spec's semantics (truncating ``divide``, ``remainder``, the
  three shifts, ``popcnt``) on 1M i32, with an ``np_ufunc`` row: NumPy's plain ufunc on
  the same data (``np.floor_divide``, ``np.fmod``, ``np.left_shift``, ``np.right_shift``,
  ``np.bitwise_count``), which has other semantics at the edges and so is not compared
  (issue 15: <= 1.0x of it);
* ``maximum`` (IEEE 754-2019) and ``round_nearest_afz`` on 1M f32.
"""

import numpy as np

from .workloads import _frameworks, _lax, _rng, dim, gbs, workload


def _f32_op(name, n, np_fn, xo_name, torch_name, jax_name, arity):
    @workload(name, f"xo.{xo_name} ({n},) f32", derived=gbs((arity + 1) * 4 * n))
    def make(be):
        rng = _rng()
        size = dim(n, 64)
        arrays = [rng.standard_normal(size, dtype=np.float32) for _ in range(arity)]
        t = be.get("torch")
        return _frameworks(
            be,
            arrays,
            np_fn,
            getattr(be["xops"], xo_name),
            t and getattr(t, torch_name),
            be.get("jax") and _lax(jax_name)(),
        )

    return make


_F32 = (
    ("add", np.add, "add", "add", "add", 2),
    ("mul", np.multiply, "multiply", "mul", "mul", 2),
    ("exp", np.exp, "exponential", "exp", "exp", 1),
    ("tanh", np.tanh, "tanh", "tanh", "tanh", 1),
)
for _n, _tag in ((1 << 20, "1M"), (1 << 24, "16M")):
    for _short, *_rest in _F32:
        _f32_op(f"{_short}_{_tag}", _n, *_rest)


def _narrow_op(short, dtype, np_fn, xo_name, torch_name, jax_name, arity):
    n = 1 << 20

    @workload(
        f"{short}_{dtype}_1M",
        f"xo.{xo_name} ({n},) {dtype}; xops_f32: the same values in f32 "
        f"(NumPy: {'ml_dtypes' if dtype == 'bf16' else 'float16'} ufunc)",
        rtol=1e-2,
        derived=gbs((arity + 1) * 2 * n),
    )
    def make(be):
        import ml_dtypes

        np_dtype = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
        rng = _rng()
        size = dim(n, 64)
        arrays = [rng.standard_normal(size).astype(np_dtype) for _ in range(arity)]
        xo, t = be["xops"], be.get("torch")
        fns = _frameworks(
            be,
            arrays,
            np_fn,
            getattr(xo, xo_name),
            t and getattr(t, torch_name),
            be.get("jax") and _lax(jax_name)(),
            torch_dtype="bfloat16" if dtype == "bf16" else "float16",
        )
        wide = [xo.tensor(a.astype(np.float32)) for a in arrays]
        f32_fn = getattr(xo, xo_name)
        fns["xops_f32"] = lambda: f32_fn(*wide)
        return fns

    return make


for _dt in ("bf16", "f16"):
    _narrow_op("add", _dt, np.add, "add", "add", "add", 2)
    _narrow_op("mul", _dt, np.multiply, "multiply", "mul", "mul", 2)
    _narrow_op("exp", _dt, np.exp, "exponential", "exp", "exp", 1)


def _np_maximum_ieee(a, b):
    # IEEE 754-2019 maximum in plain NumPy: NaN propagates (np.maximum), +0 > -0 (fix-up)
    return np.where(a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))


@workload(
    "maximum_1M",
    "xo.maximum (1048576,) f32 (IEEE 754-2019: NaN, +0 > -0)",
    derived=gbs(3 * 4 * (1 << 20)),
)
def _maximum(be):
    rng = _rng()
    a, b = (rng.standard_normal(dim(1 << 20, 64), dtype=np.float32) for _ in range(2))
    t = be.get("torch")
    return _frameworks(
        be,
        [a, b],
        _np_maximum_ieee,
        be["xops"].maximum,
        t and t.maximum,
        be.get("jax") and _lax("max")(),
    )


# --- integers: the spec's semantics against NumPy's own ufuncs ------------------------


def _np_trunc_divide(a, b):
    # the spec's integer divide in plain NumPy: truncation, x/0 = -1, INT_MIN/-1 = INT_MIN
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe)
        q = np.where((a < 0) != (safe < 0), -q, q)
        return np.where(b == 0, -1, q).astype(a.dtype)


def _np_trunc_remainder(a, b):
    # the spec's remainder: the dividend's sign, x % 0 = x
    with np.errstate(all="ignore"):
        return np.where(b == 0, a, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype)


def _np_shift(fn, unsigned=False):
    # the spec's shifts in plain NumPy: amounts outside [0, 32) give 0 (or the sign fill)
    def shift(a, b):
        ok = (b >= 0) & (b < 32)
        base = a.view(np.uint32) if unsigned else a
        out = fn(base, np.where(ok, b, 0).astype(base.dtype))
        if fn is np.right_shift and not unsigned:
            fill = np.where(a < 0, -1, 0)
        else:
            fill = 0
        return np.where(ok, out.view(a.dtype) if unsigned else out, fill).astype(a.dtype)

    return shift


def _np_popcnt(a):
    return np.bitwise_count(a.view(np.uint32)).astype(a.dtype)  # (NumPy counts |a| for signed)


def _int_data(size, op):
    rng = _rng()
    a = rng.integers(-(1 << 30), 1 << 30, size, dtype=np.int32)
    if op in ("divide", "remainder"):
        b = rng.integers(1, 1000, size, dtype=np.int32) * rng.choice(
            np.array([-1, 1], np.int32), size
        )
    else:
        b = rng.integers(0, 32, size, dtype=np.int32)
    return [a] if op == "popcnt" else [a, b]


# op -> (spec-exact NumPy reference, NumPy's plain ufunc, torch, jax.lax name)
_INT = {
    "divide": (
        _np_trunc_divide,
        np.floor_divide,
        lambda t: lambda x, y: t.div(x, y, rounding_mode="trunc"),
        "div",
    ),
    "remainder": (_np_trunc_remainder, np.fmod, lambda t: t.fmod, "rem"),
    "shift_left": (_np_shift(np.left_shift), np.left_shift, lambda t: t.bitwise_left_shift, None),
    "shift_right_arithmetic": (
        _np_shift(np.right_shift),
        np.right_shift,
        lambda t: t.bitwise_right_shift,
        None,
    ),
    "shift_right_logical": (
        _np_shift(np.right_shift, unsigned=True),
        lambda a, b: np.right_shift(a.view(np.uint32), b.view(np.uint32)),
        None,
        None,
    ),
    "popcnt": (_np_popcnt, np.bitwise_count, None, "population_count"),
}


def _int_op(op):
    ref, ufunc, torch_fn, jax_name = _INT[op]
    arity = 1 if op == "popcnt" else 2
    n = 1 << 20

    @workload(
        f"{op}_i32_1M",
        f"xo.{op} ({n},) i32 (spec semantics); np_ufunc: NumPy's plain ufunc on the same data",
        derived=gbs((arity + 1) * 4 * n),
        unchecked=("np_ufunc",),
    )
    def make(be):
        arrays = _int_data(dim(n, 64), op)
        t, jax = be.get("torch"), be.get("jax")
        if jax_name is not None:
            jax_fn = jax and _lax(jax_name)()
        else:
            jax_fn = jax and _lax(op)()
        fns = _frameworks(
            be, arrays, ref, getattr(be["xops"], op), t and torch_fn and torch_fn(t), jax_fn
        )
        fns["np_ufunc"] = lambda: ufunc(*arrays)
        return fns

    return make


for _op in _INT:
    _int_op(_op)


def _np_round_afz(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1, x), t).astype(x.dtype)


@workload("round_afz_1M", "xo.round_nearest_afz (1048576,) f32", derived=gbs(2 * 4 * (1 << 20)))
def _round(be):
    x = _rng().standard_normal(dim(1 << 20, 64), dtype=np.float32) * 10
    jax = be.get("jax")
    return _frameworks(
        be,
        [x],
        _np_round_afz,
        be["xops"].round_nearest_afz,
        None,
        jax and (lambda v: jax.lax.round(v, jax.lax.RoundingMethod.AWAY_FROM_ZERO)),
    )
