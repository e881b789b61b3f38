"""``xops.numpy.random``: random numbers with explicit keys, as ``jax.random``, on the
spec's ``rng_bit_generator`` (THREE_FRY, bit-exact with XLA).

A key is a ui64[2] tensor ``[seed, counter]``; the same key always gives the same
numbers. Make new keys with :func:`split` instead of reusing one::

    key = xnp.random.key(0)
    k1, k2 = xnp.random.split(key)
    w = xnp.random.normal(k1, (3, 4))
"""

import numpy as np

from ..errors import SpecError
from ..ops import rng as _rng
from ..tensor import Tensor, tensor
from . import _dtypes as D
from ._base import array, from_numpy

__all__ = ["bernoulli", "bits", "key", "normal", "permutation", "randint", "split", "uniform"]


def key(seed):
    """A new key from an integer seed."""
    return tensor(np.array([int(seed) & (2**64 - 1), 0], np.uint64), "ui64")


def _check(k, op):
    if not isinstance(k, Tensor) or k.dtype != "ui64" or k.shape != (2,):
        raise SpecError(
            f"random.{op}", "", f"key must be a ui64[2] tensor from xnp.random.key, got {k!r:.60}"
        )
    return k


def _raw(k, shape, op):
    _check(k, op)
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    _, out = _rng.rng_bit_generator("THREE_FRY", k, list(shape), "ui64")
    return np.asarray(out._value)


def split(key, num=2):
    """``num`` new independent keys, as a (num, 2) tensor (unpack or index it)."""
    b = _raw(key, (num,), "split")
    keys = np.stack([b, np.arange(1, num + 1, dtype=np.uint64)], axis=1)
    return tensor(keys, "ui64")


def bits(key, shape=(), dtype="ui64"):
    """Uniformly random bits."""
    dt = D.as_dtype(dtype, "random.bits")
    if dt.kind not in ("si", "ui"):
        raise SpecError("random.bits", "", f"dtype must be an integer type, got {dt.name}")
    b = _raw(key, shape, "bits")
    return from_numpy(
        (b >> np.uint64(64 - dt.bits)).astype(dt.np) if dt.bits < 64 else b.view(dt.np), dt
    )


def _unit(key, shape, dt, op):
    """Uniform floats in [0, 1) with the full precision of dt (53 or 24 bits)."""
    b = _raw(key, shape, op)
    if dt is D.float64:
        return (b >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return (b >> np.uint64(40)).astype(np.float64) * 2.0**-24


def _float_dtype(dtype, op):
    dt = D.as_dtype(dtype, op)
    if dt.kind != "float":
        raise SpecError(op, "", f"dtype must be a floating type, got {dt.name}")
    return dt


def uniform(key, shape=(), dtype="f32", minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval)."""
    dt = _float_dtype(dtype, "random.uniform")
    u = _unit(key, shape, dt, "uniform")
    out = minval + (maxval - minval) * u
    out = np.minimum(out, np.nextafter(np.float64(maxval), -np.inf)) if maxval > minval else out
    return tensor(out, dt)


def normal(key, shape=(), dtype="f32"):
    """Standard normal floats (Box-Muller on two uniform draws)."""
    dt = _float_dtype(dtype, "random.normal")
    k1, k2 = split(key)
    u1 = 1.0 - _unit(k1, shape, D.float64, "normal")  # (0, 1]: log is finite
    u2 = _unit(k2, shape, D.float64, "normal")
    return tensor(np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2), dt)


def randint(key, shape, minval, maxval, dtype="i64"):
    """Uniform integers in [minval, maxval) (bits reduced modulo the range; the bias is
    below 2**-32 for ranges under 2**32)."""
    dt = D.as_dtype(dtype, "random.randint")
    if dt.kind not in ("si", "ui") or not minval < maxval:
        raise SpecError(
            "random.randint",
            "",
            f"needs an integer dtype and minval < maxval, got {dt.name}, [{minval}, {maxval})",
        )
    b = _raw(key, shape, "randint")
    span = int(maxval) - int(minval)
    vals = (
        (b % np.uint64(span)).astype(object) + int(minval)
        if span > 2**63
        else (b % np.uint64(span)).astype(np.int64) + np.int64(minval)
    )
    return tensor(np.asarray(vals).astype(np.int64 if dt.kind == "si" else np.uint64), dt)


def bernoulli(key, p=0.5, shape=()):
    """Booleans, true with probability ``p``."""
    return from_numpy(_unit(key, shape, D.float64, "bernoulli") < p, D.bool)


def permutation(key, x):
    """A random permutation of ``range(x)`` (int x) or of x's first axis."""
    if isinstance(x, int):
        return from_numpy(np.argsort(_raw(key, (x,), "permutation"), kind="stable"), D.int64)
    from ._manipulation import take

    x = array(x, "random.permutation")
    order = np.argsort(_raw(key, (x.shape[0],), "permutation"), kind="stable")
    return take(x, order, axis=0)
