"""The benchmark workloads. Each makes one zero-argument callable per backend from the
same input data; "numpy" is the reference (a straightforward vectorised NumPy version
with the spec's semantics where NumPy has no such op).

This file holds the elementwise and dispatch workloads; each op family adds its own
``benchmarks/wl_<family>.py`` that registers workloads with ``@workload`` from here.
"""

import importlib
import pkgutil

import numpy as np

WORKLOADS = []


class Workload:
    def __init__(self, name, desc, make, rtol=1e-5, derived=None):
        self.name, self.desc, self.make, self.rtol, self.derived = name, desc, make, rtol, derived


def workload(name, desc, rtol=1e-5, derived=None):
    def register(make):
        WORKLOADS.append(Workload(name, desc, make, rtol, derived))
        return make

    return register


def load_all():
    """Import every ``benchmarks/wl_*.py`` module so its workloads register."""
    from . import __path__ as here

    for mod in sorted(m.name for m in pkgutil.iter_modules(here) if m.name.startswith("wl_")):
        importlib.import_module(f"benchmarks.{mod}")


def gbs(nbytes):
    return lambda s: f"{nbytes / s / 1e9:.2f} GB/s"


def per_op(s):
    return f"{s * 1e6:.2f} us/op"


def _frameworks(be, arrays, np_fn, xo_fn=None, torch_fn=None, jax_fn=None, torch_dtype=None):
    """One callable per available backend over the same NumPy ``arrays``."""
    fns = {"numpy": lambda: np_fn(*arrays)}
    xo = be["xops"]
    if xo_fn is not None:
        xs = [xo.tensor(a) for a in arrays]
        fns["xops"] = lambda: xo_fn(*xs)
    torch = be.get("torch")
    if torch is not None and torch_fn is not None:
        ts = [torch.from_numpy(np.asarray(a, np.float32) if torch_dtype else a) for a in arrays]
        if torch_dtype is not None:
            ts = [t.to(getattr(torch, torch_dtype)) for t in ts]
        fns["torch"] = lambda: torch_fn(*ts)
    jax = be.get("jax")
    if jax is not None and jax_fn is not None:
        import jax.numpy as jnp

        js = [jnp.asarray(a) for a in arrays]
        fns["jax"] = lambda: jax_fn(*js)
        jitted = jax.jit(jax_fn)
        fns["jax_jit"] = lambda: jitted(*js)
    return fns


def _rng():
    return np.random.default_rng(0)


@workload("dispatch_add", "add (1,)+(1,) f32: per-op overhead", derived=per_op)
def _dispatch(be):
    a = np.ones(1, np.float32)
    t, j = be.get("torch"), be.get("jax")
    return _frameworks(
        be, [a, a], np.add, be["xops"].add, t and t.add, j and (lambda x, y: j.lax.add(x, y))
    )


def _unary_binary(name, n, np_fn, xo_name, torch_name, jax_fn, arity, rtol=1e-5):
    nbytes = (arity + 1) * 4 * n

    @workload(name, f"{xo_name} ({n},) f32", rtol=rtol, derived=gbs(nbytes))
    def make(be):
        rng = _rng()
        arrays = [rng.standard_normal(n, dtype=np.float32) for _ in range(arity)]
        t = be.get("torch")
        return _frameworks(
            be,
            arrays,
            np_fn,
            getattr(be["xops"], xo_name),
            t and getattr(t, torch_name),
            be.get("jax") and jax_fn(),
        )

    return make


def _lax(name):
    def get():
        import jax

        return getattr(jax.lax, name)

    return get


for _n, _tag in ((1 << 20, "1M"), (1 << 24, "16M")):
    _unary_binary(f"add_{_tag}", _n, np.add, "add", "add", _lax("add"), 2)
    _unary_binary(f"exp_{_tag}", _n, np.exp, "exponential", "exp", _lax("exp"), 1)


@workload(
    "add_bf16_1M",
    "add (1048576,) bf16 (NumPy: ml_dtypes ufunc)",
    rtol=1e-2,
    derived=gbs(3 * 2 * (1 << 20)),
)
def _add_bf16(be):
    import ml_dtypes

    rng = _rng()
    a, b = (rng.standard_normal(1 << 20).astype(ml_dtypes.bfloat16) for _ in range(2))
    t = be.get("torch")
    return _frameworks(
        be,
        [a, b],
        np.add,
        be["xops"].add,
        t and t.add,
        be.get("jax") and _lax("add")(),
        torch_dtype="bfloat16",
    )


def _np_maximum_ieee(a, b):
    # IEEE 754-2019 maximum in plain NumPy: NaN propagates (np.maximum), +0 > -0 (fix-up)
    return np.where(a == b, np.where(np.signbit(a), b, a), np.maximum(a, b))


@workload(
    "maximum_1M",
    "maximum (1048576,) f32 (IEEE 754-2019: NaN, +0 > -0)",
    derived=gbs(3 * 4 * (1 << 20)),
)
def _maximum(be):
    rng = _rng()
    a, b = (rng.standard_normal(1 << 20, dtype=np.float32) for _ in range(2))
    t = be.get("torch")
    return _frameworks(
        be,
        [a, b],
        _np_maximum_ieee,
        be["xops"].maximum,
        t and t.maximum,
        be.get("jax") and _lax("max")(),
    )


def _np_trunc_divide(a, b):
    # the spec's integer divide in plain NumPy: truncation, x/0 = -1, INT_MIN/-1 = INT_MIN
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b)
        q = np.abs(a) // np.abs(safe)
        q = np.where((a < 0) != (safe < 0), -q, q)
        return np.where(b == 0, -1, q).astype(a.dtype)


@workload("divide_i32_1M", "divide (1048576,) i32 (truncating)", derived=gbs(3 * 4 * (1 << 20)))
def _divide(be):
    rng = _rng()
    a = rng.integers(-1000, 1000, 1 << 20, dtype=np.int32)
    b = rng.integers(1, 50, 1 << 20, dtype=np.int32) * rng.choice(
        np.array([-1, 1], np.int32), 1 << 20
    )
    t = be.get("torch")
    return _frameworks(
        be,
        [a, b],
        _np_trunc_divide,
        be["xops"].divide,
        t and (lambda x, y: t.div(x, y, rounding_mode="trunc")),
        be.get("jax") and _lax("div")(),
    )


def _np_shift_left(a, b):
    # the spec's shift_left in plain NumPy: amounts outside [0, 32) give 0
    ok = (b >= 0) & (b < 32)
    return np.where(ok, np.left_shift(a, np.where(ok, b, 0)), 0).astype(a.dtype)


@workload("shift_left_i32_1M", "shift_left (1048576,) i32", derived=gbs(3 * 4 * (1 << 20)))
def _shift(be):
    rng = _rng()
    a = rng.integers(-1000, 1000, 1 << 20, dtype=np.int32)
    b = rng.integers(0, 31, 1 << 20, dtype=np.int32)
    t = be.get("torch")
    return _frameworks(
        be,
        [a, b],
        _np_shift_left,
        be["xops"].shift_left,
        t and t.bitwise_left_shift,
        be.get("jax") and _lax("shift_left")(),
    )


def _np_round_afz(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1, x), t).astype(x.dtype)


@workload("round_afz_1M", "round_nearest_afz (1048576,) f32", derived=gbs(2 * 4 * (1 << 20)))
def _round(be):
    x = _rng().standard_normal(1 << 20, dtype=np.float32) * 10
    jax = be.get("jax")
    return _frameworks(
        be,
        [x],
        _np_round_afz,
        be["xops"].round_nearest_afz,
        None,
        jax and (lambda v: jax.lax.round(v, jax.lax.RoundingMethod.AWAY_FROM_ZERO)),
    )
