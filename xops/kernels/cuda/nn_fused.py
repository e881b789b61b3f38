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

* The max-pooling gradient's NaN mask (:func:`nan_mask`, for
  :func:`xops.ops.windows._reduce_window_vjp`): ``g if out == out else 0``, one launch
  where ``select(compare(out, out, EQ), g, 0)`` takes two.

f32 and f64 only; other types take the op composites (the callers in
:mod:`xops.nn.functional` and :mod:`xops.ops.windows` check).
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


def _nan_mask_k(out, g, res):
    i = cuda.grid(1)
    if i < res.shape[0]:
        v = out[i]
        if v == v:
            res[i] = g[i]
        else:
            res[i] = 0


def nan_mask(out, g):
    """``g if out == out else +0`` on device arrays ``out`` and ``g`` of one f32 / f64
    type and shape: the new device array; None when one is not C-contiguous or of
    another type (the caller takes the ops)."""
    if out.dtype != g.dtype or out.shape != g.shape or out.dtype.kind != "f":
        return None
    if out.dtype.itemsize not in (4, 8) or not (out.is_c_contiguous() and g.is_c_contiguous()):
        return None
    res = device_empty(g.shape, g.dtype)
    launch_1d(compiled(_nan_mask_k), g.size, flat(out), flat(g), flat(res))
    return res


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
    ``out_v``); an absent pair's arrays stand in for the other's and are not written;
    bit 4: thread 0 also writes ``count + 1`` (BatchNorm's ``num_batches_tracked``, int64,
    one element) to ``out_count``."""
    mul, add, _, _, _ = _rounded.ops(np_type)

    def running(om, bm, ov, bv, mode, c_keep, c_m, c_s, out_m, out_v, count, out_count):
        i = cuda.grid(1)
        if i < out_m.shape[0]:
            if mode & 1:
                out_m[i] = add(mul(om[i], c_keep), mul(bm[i], c_m))
            if mode & 2:
                out_v[i] = add(mul(ov[i], c_keep), mul(mul(bv[i], c_s), c_m))
        if mode & 4 and i == 0:
            out_count[0] = count[0] + 1

    running.__name__ = f"bn_running_{np.dtype(np_type).name}"
    return running


_KERNELS = {}


def running_stats(om, bm, ov, bv, m, s, count=None):
    """The new (running_mean, running_var) device arrays from the old ones ``om, ov`` and
    the batch's ``bm, bv`` (an absent pair: both None, and None back), momentum ``m``
    and the variance's factor ``s``; all of one f32 / f64 type and shape. With ``count``
    (a one-element int64 device array: BatchNorm's batch counter) a third array, count
    + 1, from the same launch. None when an array is not C-contiguous or ``count`` is not
    such an array (the caller takes the op composite)."""
    arrays = [a for a in (om, bm, ov, bv) if a is not None]
    if not arrays or not all(a.is_c_contiguous() for a in arrays):
        return None
    if count is not None and (count.dtype != np.int64 or count.size != 1):
        return None
    c = arrays[0].dtype.type
    kernel = _KERNELS.get(c)
    if kernel is None:
        kernel = _KERNELS[c] = compiled(_running_kernel(c))
    out_m = None if om is None else device_empty(om.shape, om.dtype)
    out_v = None if ov is None else device_empty(ov.shape, ov.dtype)
    mode = (om is not None) | (ov is not None) << 1 | (count is not None) << 2
    m_pair = (om, bm, out_m) if om is not None else (ov, bv, out_v)
    v_pair = (ov, bv, out_v) if ov is not None else m_pair
    out_count = None if count is None else device_empty(count.shape, count.dtype)
    counts = (flat(count), flat(out_count)) if count is not None else (_no_count(),) * 2
    launch_1d(
        kernel, m_pair[0].size, flat(m_pair[0]), flat(m_pair[1]), flat(v_pair[0]),
        flat(v_pair[1]), mode, c(1 - m), c(m), c(s), flat(m_pair[2]), flat(v_pair[2]), *counts,
    )  # fmt: skip
    return (out_m, out_v) if count is None else (out_m, out_v, out_count)


_counts = []


def _no_count():
    """A one-element int64 device array for the counter arguments when there is none
    (never read or written: mode bit 4 is off)."""
    if not _counts:
        _counts.append(device_empty((1,), np.dtype(np.int64)))
    return _counts[0]


KERNELS = {"nn.functional.relu": relu}
UPDATES = {"relu_grad": relu_grad, "batch_norm_running": running_stats, "nan_mask": nan_mask}
