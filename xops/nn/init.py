"""Initialisers (He/Kaiming, Glorot/Xavier, uniform, normal) and random streams.

**Where the numbers come from.** Every function takes ``generator=None``:

* ``None``: xops' module-level stream, the one ``xo.rng_uniform`` / ``xo.rng_normal``
  draw from. ``xo.random_seed(n)`` makes everything after it reproducible (model
  construction, dropout masks, ...), in that order.
* a :class:`Generator`: an explicit, independent stream. It holds a PHILOX state and
  draws with ``xo.rng_bit_generator`` (a pure function of the state, bit-exact with
  XLA), so two generators with one seed give the same numbers whatever else the program
  draws in between.

**Forms.** ``kaiming_uniform(shape, ...)`` returns a new tensor; the PyTorch-style
``kaiming_uniform_(param, ...)`` fills an existing parameter in place (through
:func:`xops.nn.assign_`) and returns it.

Fans follow PyTorch's convention for weights laid out (out_features, in_features,
*kernel): ``fan_in = shape[1] * prod(kernel)``, ``fan_out = shape[0] * prod(kernel)``
(a Linear weight is (out, in), a Conv2d weight OIHW).
"""

import math

import numpy as np

from ..dtypes import as_dtype
from ..ops.rng import rng_bit_generator, rng_normal, rng_uniform
from ..tensor import Tensor, tensor
from .parameter import assign_

__all__ = [
    "Generator",
    "calculate_gain",
    "calculate_fan_in_and_fan_out",
    "uniform",
    "normal",
    "zeros",
    "ones",
    "constant",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "uniform_",
    "normal_",
    "zeros_",
    "ones_",
    "constant_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
]

_M64 = (1 << 64) - 1
_TWO_M53 = 2.0**-53


class Generator:
    """An explicit random stream: a PHILOX state ``[key, counter]`` threaded through
    ``xo.rng_bit_generator``. Same seed, same numbers, independent of every other draw.

    >>> g = xo.nn.Generator(0)
    >>> g.uniform([2, 3])            # f32[2,3] in [0, 1)
    xo.tensor(..., f32[2,3])
    >>> xo.nn.init.kaiming_normal([16, 1, 3, 3], generator=g).shape
    (16, 1, 3, 3)
    >>> bool((xo.nn.Generator(0).uniform([5]) == xo.nn.Generator(0).uniform([5])).all())
    True
    """

    def __init__(self, seed=0):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        """Restart the stream at key ``seed`` (an int, modulo 2**64), counter 0."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"Generator: seed must be an integer, got {seed!r}")
        self.state = tensor(np.array([int(seed) & _M64, 0], np.uint64), "ui64")
        return self

    def bits(self, shape):
        """A ui64 tensor of ``shape`` holding random bits (advances the state)."""
        self.state, out = rng_bit_generator("PHILOX", self.state, list(shape), "ui64")
        return out

    def _unit(self, shape):
        """float64 array of ``shape``, uniform on [0, 1) with 53 random bits each."""
        return (np.asarray(self.bits(shape)) >> np.uint64(11)).astype(np.float64) * _TWO_M53

    def uniform(self, shape, low=0.0, high=1.0, dtype="f32"):
        """Uniform on [low, high): computed in float64, rounded once to ``dtype`` (a value
        that rounds up to ``high`` is replaced by the largest value below it)."""
        dt = as_dtype(dtype)
        v = low + self._unit(shape) * (high - low)
        out = np.asarray(tensor(v, dt))
        top = np.asarray(tensor(high, dt))
        if (out >= top).any():  # rounded up to high: take the largest value below it
            below = np.nextafter(top.reshape(1), np.array([dt.min], dt.np))[0]
            out = np.where(out >= top, below, out)
        return tensor(out, dt)

    def normal(self, shape, mean=0.0, std=1.0, dtype="f32"):
        """Normal(mean, std) by Box-Muller in float64, rounded once to ``dtype``."""
        n = int(np.prod(shape, dtype=np.int64))
        pairs = -(-n // 2)
        u = self._unit([2 * pairs])
        u1, u2 = 1.0 - u[0::2], u[1::2]  # u1 in (0, 1]: log never sees 0
        r = np.sqrt(-2.0 * np.log(u1))
        z = np.empty(2 * pairs)
        z[0::2] = r * np.cos(2 * np.pi * u2)
        z[1::2] = r * np.sin(2 * np.pi * u2)
        return tensor((mean + std * z[:n]).reshape(shape), as_dtype(dtype))


# ---------------------------------------------------------------------------------------
# Fans and gains (PyTorch's conventions)
# ---------------------------------------------------------------------------------------


def calculate_fan_in_and_fan_out(shape):
    """``(fan_in, fan_out)`` of a weight of ``shape`` = (out, in, *kernel)."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError(f"fans need a weight of rank >= 2 (out, in, *kernel), got shape {shape}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + a^2)) for leaky_relu (slope ``param``, default
    0.01), 3/4 for selu (as ``torch.nn.init.calculate_gain``)."""
    linear = (
        "linear",
        "identity",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        a = 0.01 if param is None else param
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {a!r} is not a number")
        return math.sqrt(2.0 / (1 + a * a))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fan(shape, mode):
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")


# ---------------------------------------------------------------------------------------
# New tensors
# ---------------------------------------------------------------------------------------


def uniform(shape, low=0.0, high=1.0, dtype="f32", generator=None):
    """A new tensor, uniform on [low, high)."""
    dt = as_dtype(dtype)
    shape = [int(s) for s in shape]
    if not low < high:
        raise ValueError(f"uniform: low must be below high, got {low} and {high}")
    if generator is not None:
        return generator.uniform(shape, low, high, dt)
    return rng_uniform(tensor(low, dt), tensor(high, dt), shape)


def normal(shape, mean=0.0, std=1.0, dtype="f32", generator=None):
    """A new tensor, normal with ``mean`` and standard deviation ``std``."""
    dt = as_dtype(dtype)
    shape = [int(s) for s in shape]
    if not std >= 0:
        raise ValueError(f"normal: std must be >= 0, got {std}")
    if generator is not None:
        return generator.normal(shape, mean, std, dt)
    return rng_normal(tensor(mean, dt), tensor(std, dt), shape)


def constant(shape, value, dtype="f32"):
    """A new tensor of ``shape`` and element type ``dtype`` filled with ``value``."""
    dt = as_dtype(dtype)
    return tensor(np.full([int(s) for s in shape], value, dt.compute), dt)


def zeros(shape, dtype="f32"):
    """A new tensor of ``shape`` and element type ``dtype`` filled with 0."""
    return constant(shape, 0.0, dtype)


def ones(shape, dtype="f32"):
    """A new tensor of ``shape`` and element type ``dtype`` filled with 1."""
    return constant(shape, 1.0, dtype)


def xavier_uniform(shape, gain=1.0, dtype="f32", generator=None):
    """Glorot & Bengio (2010): U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform(shape, -a, a, dtype, generator)


def xavier_normal(shape, gain=1.0, dtype="f32", generator=None):
    """Glorot & Bengio (2010): N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    return normal(shape, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), dtype, generator)


def kaiming_uniform(
    shape, a=0.0, mode="fan_in", nonlinearity="leaky_relu", dtype="f32", generator=None
):
    """He et al. (2015): U(-b, b), b = gain * sqrt(3 / fan), gain from ``nonlinearity``
    (``a`` is leaky_relu's negative slope). PyTorch's Linear/Conv default is a=sqrt(5)."""
    b = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(shape, mode))
    return uniform(shape, -b, b, dtype, generator)


def kaiming_normal(
    shape, a=0.0, mode="fan_in", nonlinearity="leaky_relu", dtype="f32", generator=None
):
    """He et al. (2015): N(0, std^2), std = gain / sqrt(fan)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(shape, mode))
    return normal(shape, 0.0, std, dtype, generator)


# ---------------------------------------------------------------------------------------
# In place (PyTorch style): fill an existing parameter, keep its identity
# ---------------------------------------------------------------------------------------


def _fill(param, make, *args, **kwargs):
    if not isinstance(param, Tensor):
        raise TypeError(f"expected a parameter Tensor, got {type(param).__name__}")
    return assign_(param, make(param.shape, *args, dtype=param._dtype, **kwargs))


def uniform_(param, low=0.0, high=1.0, generator=None):
    """Fill ``param`` in place with ``uniform`` (its shape and element type); returns it."""
    return _fill(param, uniform, low, high, generator=generator)


def normal_(param, mean=0.0, std=1.0, generator=None):
    """Fill ``param`` in place with ``normal`` (its shape and element type); returns it."""
    return _fill(param, normal, mean, std, generator=generator)


def constant_(param, value):
    """Fill ``param`` in place with ``constant`` (its shape and element type); returns it."""
    return _fill(param, constant, value)


def zeros_(param):
    """Fill ``param`` in place with zeros (its shape and element type); returns it."""
    return _fill(param, zeros)


def ones_(param):
    """Fill ``param`` in place with ones (its shape and element type); returns it."""
    return _fill(param, ones)


def xavier_uniform_(param, gain=1.0, generator=None):
    """Fill ``param`` in place with ``xavier_uniform`` (its shape and element type); returns it."""
    return _fill(param, xavier_uniform, gain, generator=generator)


def xavier_normal_(param, gain=1.0, generator=None):
    """Fill ``param`` in place with ``xavier_normal`` (its shape and element type); returns it."""
    return _fill(param, xavier_normal, gain, generator=generator)


def kaiming_uniform_(param, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Fill ``param`` in place with ``kaiming_uniform`` (its shape and element type); returns it."""
    return _fill(param, kaiming_uniform, a, mode, nonlinearity, generator=generator)


def kaiming_normal_(param, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Fill ``param`` in place with ``kaiming_normal`` (its shape and element type); returns it."""
    return _fill(param, kaiming_normal, a, mode, nonlinearity, generator=generator)
