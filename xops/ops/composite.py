"""composite and XLA's CompositeCall (an op that runs its decomposition), and XLA's
RngBernoulli (ui32 coin flips from the stream of ``xo.rng``).
"""

import builtins

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype
from ..registry import declare
from ..tensor import _wrap
from ._core import as_tensor, attr_int, check, check_arity, tstr
from .misc import Token

__all__ = ["composite", "composite_call", "rng_bernoulli"]


def _composite(op, inputs, name, composite_attributes, decomposition, version):
    check(
        isinstance(name, str) and name != "",
        op,
        "I2",
        lambda: f"name must be a non-empty string, got {name!r}",
    )
    check(
        composite_attributes is None or isinstance(composite_attributes, (dict, str)),
        op,
        "I3",
        lambda: (
            f"composite_attributes must be a dict (or XLA's string form), got "
            f"{type(composite_attributes).__name__}"
        ),
    )
    check(
        callable(decomposition),
        op,
        "I4",
        lambda: f"decomposition must be callable, got {decomposition!r}",
    )
    v = attr_int(op, "I5", "version", version)
    check(v >= 0, op, "I5", lambda: f"version must be >= 0, got {v}")
    ins = [
        x if isinstance(x, Token) else as_tensor(x, None, op, f"inputs[{i}]")
        for i, x in enumerate(inputs)
    ]
    check_arity(op, "I4", "decomposition", decomposition, len(ins))
    return decomposition(*ins)


@declare("composite")
def composite(inputs, name, composite_attributes=None, decomposition=None, version=0):
    """stablehlo.composite: an op made of other ops; it runs ``decomposition(*inputs)``
    (``name``, ``composite_attributes`` and ``version`` are metadata). Gradients flow
    through the decomposition's ops.

    >>> xo.composite([xo.tensor(1.0)], "my.add_one", {}, lambda x: xo.add(x, 1.0))   # 2.0
    xo.tensor(2., f32[])
    """
    ins = list(inputs) if isinstance(inputs, (list, builtins.tuple)) else [inputs]
    return _composite("composite", ins, name, composite_attributes, decomposition, version)


@declare("composite_call", spec="xla")
def composite_call(computation, *operands, name, composite_attributes=None, version=0):
    """XLA CompositeCall (``Call`` with ``is_composite=true``): ``computation(*operands)``,
    with ``name``, ``composite_attributes`` and ``version`` as metadata.

    >>> xo.composite_call(lambda x: xo.multiply(x, 2.0), xo.tensor(3.0), name="foo.bar")
    ... # 6.0
    xo.tensor(6., f32[])
    """
    return _composite(
        "composite_call", list(operands), name, composite_attributes, computation, version
    )


@primitive("rng_bernoulli", spec="xla", creation=True)
def rng_bernoulli(mean, shape):
    """XLA RngBernoulli: a ui32 tensor of ``shape`` whose elements are 1 with probability
    ``mean`` (a 0-d floating-point tensor in [0, 1], F32 in XLA) and 0 otherwise. Draws
    from the stream of ``xo.rng`` (seeded by ``xo.random_seed``): element = u < mean for u
    a 53-bit uniform on [0, 1).

    >>> xo.random_seed(0); xo.rng_bernoulli(xo.tensor(0.5), [8])   # ui32 0s and 1s
    xo.tensor([0, 0, 1, 1, 1, 1, 1, 1], ui32[8])
    """
    from .rng import _unit_uniform

    p, dims = rng_bernoulli_checks(mean, shape)
    n = int(np.prod(dims, dtype=np.int64))
    u = _unit_uniform(n)
    return _wrap((u < p).astype(np.uint32).reshape(dims), as_dtype("ui32"))


def rng_bernoulli_checks(mean, shape):
    """rng_bernoulli's checks (the CUDA kernel runs them too, on a host copy of the 0-d
    mean): ``(mean as a Python float, output dims)``."""
    from ..limits import check_nbytes
    from .rng import _shape_operand

    op = "rng_bernoulli"
    m = as_tensor(mean, "f32", op, "mean")
    check(
        m.ndim == 0 and m._dtype.kind == "float",
        op,
        "I1",
        lambda: f"mean must be a 0-d floating-point tensor, got {tstr(m)}",
    )
    p = float(np.asarray(m._value).astype(np.float64))
    check(0.0 <= p <= 1.0, op, "I1", lambda: f"mean must be a probability in [0, 1], got {p}")
    dims = _shape_operand(op, "I2", shape)
    check_nbytes(op, dims, as_dtype("ui32"))
    check_nbytes(op, dims, 8, "temporary (random float64 values)")
    return p, dims
