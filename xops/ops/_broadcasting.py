"""NumPy-style broadcasting for the layers above the spec ops (the Python operators of
:mod:`.operators` and :mod:`xops.numpy`): the spec's ops themselves never broadcast
implicitly, so these spell it out with ``broadcast_in_dim``."""

import numpy as np

from ..errors import SpecError
from . import movement as mv
from ._core import tstr


def broadcast_to(t, shape):
    """``t`` broadcast to ``shape`` (a tuple) by NumPy's rule: trailing dims aligned."""
    if t._value.shape == shape:
        return t
    rank = len(shape)
    return mv.broadcast_in_dim(t, list(range(rank - t.ndim, rank)), shape)


def broadcast_batch(op, label, a, b):
    """Two stacks of matrices (rank >= 2) broadcast to one batch shape, as NumPy's matmul
    and linalg functions do: the dims before the last two broadcast, the matrices stay."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise SpecError(
            op, label, f"batch dims of {tstr(a)} and {tstr(b)} do not broadcast"
        ) from None
    return broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:])
