"""How large a tensor type a StableHLO program may declare.

A program is refused at parse time, before anything runs, when one of its tensor types
would need more memory than xops' resource limit (``tensor<100000000000xf32>`` is 400
GB): the parser raises a :class:`~xops.stablehlo.ParseError` labelled ``resource limit``
at that type. The limit is the one every op obeys, ``xops.config.max_bytes`` (env
``XOPS_MAX_BYTES``; default: half the physical memory), so it is configured in one
place (:mod:`xops.limits`).
"""

import numpy as np

__all__ = ["max_tensor_bytes", "tensor_bytes"]


def max_tensor_bytes():
    """The limit in bytes: ``xops.config.max_bytes``."""
    try:
        from ..limits import max_bytes
    except ImportError:  # pragma: no cover - xops.limits is part of xops
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    return max_bytes()


def tensor_bytes(shape, elem):
    """Bytes a tensor of static ``shape`` and element type ``elem`` takes in xops (one
    byte per element for i1 and the sub-byte types); Python ints, so no overflow."""
    n = 1
    for d in shape:
        n *= d
    try:
        itemsize = np.dtype(elem.np).itemsize
    except (AttributeError, TypeError):  # quantized/opaque element types: storage size
        itemsize = np.dtype(getattr(getattr(elem, "storage", None), "np", np.int8)).itemsize
    return n * max(int(itemsize), 1)
