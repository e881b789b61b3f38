"""Fused optimizer updates for CUDA tensors: one kernel per parameter and step where the
op-by-op update (:mod:`xops.optim`) launches about a dozen elementwise kernels, each with
its own output and its host-side dispatch (on a GPU the training step is bound by that
host time, not by the device).

The kernel computes the optimizer's own steps, in the same order, each rounded once to
the element type, with the hyper-parameters rounded to that type first (as a weak scalar
operand is): its bits equal the op-by-op update's and the CPU's. Its arithmetic is
:mod:`._rounded`'s (no product contracted into an fma)."""

import math

import numpy as np

from . import _rounded
from ._storage import compiled, device_empty, flat, launch_1d, numba_cuda, shaped

__all__ = ["UPDATES"]

cuda = numba_cuda()


_STEPS = {}


def _adam_step(np_type):
    """The device function of one element's Adam step: ``(p, m, v)`` new from ``p, g``
    and the moments ``m, v`` (not read on the first step, ``first``); ``wd_mode`` 1 scales
    p by ``c_wd`` (AdamW's decoupled decay), 2 adds ``c_wd * p`` to the gradient (L2)."""
    fn = _STEPS.get(np_type)
    if fn is None:
        mul, add, sub, div, sqrt = _rounded.ops(np_type)

        def adam_step(pi, gi, mo, vo, first, wd_mode, c_wd, b1, c1, b2, c2, sbc2, eps, step):
            if wd_mode == 1:
                pi = mul(pi, c_wd)
            elif wd_mode == 2:
                gi = add(gi, mul(pi, c_wd))
            g2 = mul(gi, gi)
            if first:
                mi, vi = mul(gi, c1), mul(g2, c2)
            else:
                mi, vi = add(mul(mo, b1), mul(gi, c1)), add(mul(vo, b2), mul(g2, c2))
            denom = add(div(sqrt(vi), sbc2), eps)
            return sub(pi, mul(div(mi, denom), step)), mi, vi

        fn = _STEPS[np_type] = cuda.jit(device=True)(adam_step)
    return fn


def _adam_kernel(np_type):
    """Adam's update of one element per thread (:func:`_adam_step`): ``p_out, m_out,
    v_out`` from ``p, g`` and the moments ``m, v`` (any array of the size on the first
    step: not read)."""
    one = _adam_step(np_type)

    def adam(p, g, m, v, first, wd_mode, c_wd, b1, c1, b2, c2, sbc2, eps, step, p_out, m_out,
             v_out):  # fmt: skip
        i = cuda.grid(1)
        if i < p_out.shape[0]:
            p_out[i], m_out[i], v_out[i] = one(
                p[i], g[i], m[i], v[i], first, wd_mode, c_wd, b1, c1, b2, c2, sbc2, eps, step
            )

    adam.__name__ = f"adam_{np.dtype(np_type).name}"
    return adam


_KERNELS = {}


def adam(p, m, v, g, lr, b1, b2, eps, wd, decoupled, t):
    """One Adam / AdamW step on device arrays ``p, g`` and the moments ``m, v`` (None on
    the first step), all of one f32/f64 type and shape, step number ``t``: the new
    (p, m, v); None when an array is not C-contiguous (a view: the caller takes the
    op-by-op update)."""
    if not all(a.is_c_contiguous() for a in (p, g, m, v) if a is not None):
        return None
    c = p.dtype.type
    kernel = _KERNELS.get(("adam", c))
    if kernel is None:
        kernel = _KERNELS["adam", c] = compiled(_adam_kernel(c))
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    wd_mode, c_wd = (0, c(0)) if not wd else (1, c(1 - lr * wd)) if decoupled else (2, c(wd))
    outs = [device_empty(p.shape, p.dtype) for _ in range(3)]
    first = m is None
    launch_1d(
        kernel, p.size, flat(p), flat(g), flat(g if first else m), flat(g if first else v),
        int(first), wd_mode, c_wd, c(b1), c(1 - b1), c(b2), c(1 - b2), c(math.sqrt(bc2)),
        c(eps), c(lr / bc1), *map(flat, outs),
    )  # fmt: skip
    return outs


def _adam_many_kernel(np_type, n):
    """Adam's update of ``n`` parameters in one launch, one element per thread: the
    parameters' elements numbered one after another (parameter j's end at ``ends[j]``),
    each thread finds its parameter and takes :func:`_adam_step`; the new p, m and v of
    element i go to ``out[i]``, ``out[total + i]`` and ``out[2 total + i]``."""
    one = _adam_step(np_type)

    def adam_many(ps, gs, ms, vs, ends, first, wd_mode, c_wd, b1, c1, b2, c2, sbc2, eps, step,
                  out):  # fmt: skip
        i = cuda.grid(1)
        total = ends[n - 1]
        if i < total:
            j = 0
            start = 0
            while i >= ends[j]:
                start = ends[j]
                j += 1
            k = i - start
            out[i], out[total + i], out[2 * total + i] = one(
                ps[j][k], gs[j][k], ms[j][k], vs[j][k], first, wd_mode, c_wd, b1, c1, b2, c2,
                sbc2, eps, step,
            )  # fmt: skip

    adam_many.__name__ = f"adam_many{n}_{np.dtype(np_type).name}"
    return adam_many


MANY = 8  # parameters per launch of the multi-tensor update (its kernel parameters: ~2 KiB)


def adam_many(items, lr, b1, b2, eps, wd, decoupled, t):
    """One Adam / AdamW step of several parameters: ``items`` a list of device arrays
    ``(p, m, v, g)`` of one f32/f64 type (each tuple of one shape; ``m, v`` None on the
    first step, for all of them), step number ``t``. The new ``(p, m, v)`` of each, the
    bits of :func:`adam`'s, from one launch per :data:`MANY` parameters and one
    allocation per launch (the results are views of it); None when an array is not
    C-contiguous."""
    if not all(a.is_c_contiguous() for item in items for a in item if a is not None):
        return None
    c = items[0][0].dtype.type
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    wd_mode, c_wd = (0, c(0)) if not wd else (1, c(1 - lr * wd)) if decoupled else (2, c(wd))
    first = items[0][1] is None
    scalars = (
        int(first), wd_mode, c_wd, c(b1), c(1 - b1), c(b2), c(1 - b2), c(math.sqrt(bc2)), c(eps),
        c(lr / bc1),
    )  # fmt: skip
    news = []
    for lo in range(0, len(items), MANY):
        part = items[lo : lo + MANY]
        n = len(part)
        kernel = _KERNELS.get(("adam_many", c, n))
        if kernel is None:
            kernel = _KERNELS["adam_many", c, n] = compiled(_adam_many_kernel(c, n))
        ends, total = [], 0
        for p, _, _, _ in part:
            total += p.size
            ends.append(total)
        if not total:  # (size-0 parameters only)
            news += [tuple(device_empty(p.shape, p.dtype) for _ in range(3)) for p, *_ in part]
            continue
        ps = tuple(flat(p) for p, _, _, _ in part)
        gs = tuple(flat(g) for _, _, _, g in part)
        ms = gs if first else tuple(flat(m) for _, m, _, _ in part)
        vs = gs if first else tuple(flat(v) for _, _, v, _ in part)
        out = device_empty((3 * total,), part[0][0].dtype)
        launch_1d(kernel, total, ps, gs, ms, vs, tuple(ends), *scalars, out)
        for (p, _, _, _), end in zip(part, ends):
            start = end - p.size
            news.append(tuple(shaped(out, p.shape, None, start + k * total) for k in range(3)))
    return news


def _sgd_kernel(np_type):
    """SGD's update of one element per thread: ``p_out`` and the momentum buffer
    ``b_out`` from ``p, g`` and the buffer ``b`` (unread on the first step, ``first``);
    ``wd`` > 0 adds ``c_wd * p`` to the gradient, ``mode`` 0 plain, 1 momentum, 2 Nesterov;
    ``damped``: the gradient enters the buffer times ``c_damp``."""
    mul, add, sub, _, _ = _rounded.ops(np_type)

    def sgd(p, g, b, first, wd, mode, damped, c_wd, c_mom, c_damp, c_lr, p_out, b_out):
        i = cuda.grid(1)
        if i < p_out.shape[0]:
            pi, gi = p[i], g[i]
            if wd:
                gi = add(gi, mul(pi, c_wd))
            if mode:
                if first:
                    bi = gi
                else:
                    bi = add(mul(b[i], c_mom), mul(gi, c_damp) if damped else gi)
                b_out[i] = bi
                gi = add(gi, mul(bi, c_mom)) if mode == 2 else bi
            p_out[i] = sub(pi, mul(gi, c_lr))

    sgd.__name__ = f"sgd_{np.dtype(np_type).name}"
    return sgd


def sgd(p, b, g, lr, momentum, dampening, wd, nesterov):
    """One SGD step on device arrays ``p, g`` and the momentum buffer ``b`` (None on the
    first step or without momentum), of one f32/f64 type and shape: the new (p, buffer
    or None); None when an array is not C-contiguous (see :func:`adam`)."""
    if not all(a.is_c_contiguous() for a in (p, g, b) if a is not None):
        return None
    c = p.dtype.type
    kernel = _KERNELS.get(("sgd", c))
    if kernel is None:
        kernel = _KERNELS["sgd", c] = compiled(_sgd_kernel(c))
    mode = 0 if not momentum else 2 if nesterov else 1
    p_out = device_empty(p.shape, p.dtype)
    b_out = device_empty(p.shape, p.dtype) if mode else p_out
    first = b is None
    launch_1d(
        kernel, p.size, flat(p), flat(g), flat(g if first else b), int(first), int(bool(wd)),
        mode, int(bool(dampening)), c(wd), c(momentum), c(1 - dampening), c(lr), flat(p_out),
        flat(b_out),
    )  # fmt: skip
    return p_out, (b_out if mode else None)


UPDATES = {"adam": adam, "adam_many": adam_many, "sgd": sgd}
