"""Fused CUDA kernels of :mod:`xops.nn.functional`: one launch where the op-by-op path
launches several (on a GPU the training step is bound by each op's host-side dispatch,
not by the device).

* ``relu`` (the primitive ``nn.functional.relu``): ``0 if x <= 0 else x``, one thread per
  element; NaN propagates and -0.0 gives +0.0, as ``select(compare(x, 0, LE), 0, x)``.
  Its gradient (:func:`relu_grad`, reached through ``device._updates``): ``0 if x <= 0
  else g`` (x = 0 gives 0, NaN passes g), as that select's rule.
* BatchNorm's running statistics (:func:`running_stats`): both updates of a
  ``batch_norm(training=True)`` call in one launch::

      mean = old_mean * (1 - m) + batch_mean * m
      var  = old_var * (1 - m) + (batch_var * s) * m      (s = n / (n - 1))

  each product and sum rounded once to the element type (:mod:`._rounded`: no product
  contracted into an fma), with ``1 - m``, ``m`` and ``s`` rounded to that type first as
  weak scalar operands are: the bits of the op composite and of the CPU.

f32 and f64 only; other types take the op composites (the callers in
:mod:`xops.nn.functional` check).
"""

import numpy as np

from ...errors import SpecError
from . import _rounded
from ._storage import compiled, device_empty, flat, from_holder, launch_1d, numba_cuda, on_device

__all__ = ["KERNELS", "UPDATES"]

cuda = numba_cuda()

_FLOATS = ("f32", "f64")


def _relu_k(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        if v <= 0:  # (two stores, not one of a unified type: the bits of v unchanged)
            out[i] = 0
        else:
            out[i] = v


def _relu_grad_k(x, g, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        if x[i] <= 0:
            out[i] = 0
        else:
            out[i] = g[i]


def relu(x):
    """The CUDA kernel of ``nn.functional.relu`` (f32 / f64 operands)."""
    v = on_device("relu", x, "operand")
    if x._dtype.name not in _FLOATS:
        raise SpecError("relu", "operand", f"no CUDA kernel for {x.type} (f32 and f64 only)")
    out = device_empty(v.shape, v.dtype)
    launch_1d(compiled(_relu_k), v.size, flat(v), flat(out))
    return from_holder(out, x._dtype)


def relu_grad(x, g):
    """relu's gradient on device arrays ``x`` (the operand) and ``g`` (the cotangent),
    of one f32 / f64 type and shape: the new device array; None when one is not
    C-contiguous (the caller takes the op rule)."""
    if not (x.is_c_contiguous() and g.is_c_contiguous()):
        return None
    out = device_empty(g.shape, g.dtype)
    launch_1d(compiled(_relu_grad_k), g.size, flat(x), flat(g), flat(out))
    return out


def _running_kernel(np_type):
    """Both running statistics of one batch_norm call, one feature per thread; ``mode``
    bit 1: the mean (``om``, ``bm`` -> ``out_m``), bit 2: the variance (``ov``, ``bv`` ->
    ``out_v``); an absent pair's arrays stand in for the other's and are not written."""
    mul, add, _, _, _ = _rounded.ops(np_type)

    def running(om, bm, ov, bv, mode, c_keep, c_m, c_s, out_m, out_v):
        i = cuda.grid(1)
        if i < out_m.shape[0]:
            if mode & 1:
                out_m[i] = add(mul(om[i], c_keep), mul(bm[i], c_m))
            if mode & 2:
                out_v[i] = add(mul(ov[i], c_keep), mul(mul(bv[i], c_s), c_m))

    running.__name__ = f"bn_running_{np.dtype(np_type).name}"
    return running


_KERNELS = {}


def running_stats(om, bm, ov, bv, m, s):
    """The new (running_mean, running_var) device arrays from the old ones ``om, ov`` and
    the batch's ``bm, bv`` (an absent pair: both None, and None back), momentum ``m``
    and the variance's factor ``s``; all of one f32 / f64 type and shape. None when an
    array is not C-contiguous (the caller takes the op composite)."""
    arrays = [a for a in (om, bm, ov, bv) if a is not None]
    if not arrays or not all(a.is_c_contiguous() for a in arrays):
        return None
    c = arrays[0].dtype.type
    kernel = _KERNELS.get(c)
    if kernel is None:
        kernel = _KERNELS[c] = compiled(_running_kernel(c))
    out_m = None if om is None else device_empty(om.shape, om.dtype)
    out_v = None if ov is None else device_empty(ov.shape, ov.dtype)
    mode = (om is not None) | (ov is not None) << 1
    m_pair = (om, bm, out_m) if om is not None else (ov, bv, out_v)
    v_pair = (ov, bv, out_v) if ov is not None else m_pair
    launch_1d(
        kernel, m_pair[0].size, flat(m_pair[0]), flat(m_pair[1]), flat(v_pair[0]),
        flat(v_pair[1]), mode, c(1 - m), c(m), c(s), flat(m_pair[2]), flat(v_pair[2]),
    )  # fmt: skip
    return out_m, out_v


KERNELS = {"nn.functional.relu": relu}
UPDATES = {"relu_grad": relu_grad, "batch_norm_running": running_stats}
