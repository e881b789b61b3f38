"""Convolution workloads: forward, and both gradients expressed as convolutions.

NCHW x OIHW, 3x3 kernels, padding 1, float32. For each layer shape:

* ``conv_fwd_*``: the forward convolution;
* ``conv_dlhs_*``: the input gradient = a convolution of the output cotangent with the
  spatially reversed kernel, input/output features swapped (xops: the pullback of
  ``xo.vjp(lambda x: xo.convolution(x, w, ...), x)``, as a user gets it; torch:
  ``torch.nn.grad.conv2d_input``; jax: the lhs half of ``jax.vjp``);
* ``conv_drhs_*``: the kernel gradient = a convolution of the input with the
  cotangent, batch and feature roles swapped (xops: the pullback of ``xo.vjp`` with
  respect to the kernel; torch: ``torch.nn.grad.conv2d_weight``; jax: the rhs half of
  ``jax.vjp``).

Shapes (issue 15): CIFAR's first layer at batch 8 and 64 (3 -> 32 channels, 32x32) and a
mid layer (64, 32, 16, 16) -> 64 channels.

"numpy" is the straightforward vectorised version: ``sliding_window_view`` + ``einsum``.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .workloads import _rng, dim, gflops, workload

# N, C, H(=W), O
LAYERS = {"cifar_b8": (8, 3, 32, 32), "cifar_b64": (64, 3, 32, 32), "mid": (64, 32, 16, 64)}
PAD = 1


def _windows(x):
    return sliding_window_view(x, (3, 3), axis=(2, 3))  # (N, C, H, W, 3, 3)


def np_forward(x, w):
    xp = np.pad(x, [(0, 0), (0, 0), (PAD, PAD), (PAD, PAD)])
    return np.einsum("nchwij,ocij->nohw", _windows(xp), w, optimize=True)


def np_grad_lhs(g, w):
    gp = np.pad(g, [(0, 0), (0, 0), (2 - PAD, 2 - PAD), (2 - PAD, 2 - PAD)])
    return np.einsum("nohwij,ocij->nchw", _windows(gp), w[:, :, ::-1, ::-1], optimize=True)


def np_grad_rhs(x, g):
    xp = np.pad(x, [(0, 0), (0, 0), (PAD, PAD), (PAD, PAD)])
    return np.einsum("nchwij,nohw->ocij", _windows(xp), g, optimize=True)


def _data(layer):
    n, c, h, o = dim(LAYERS[layer], (2, 3, 6, 4))
    rng = _rng()
    x = rng.standard_normal((n, c, h, h), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    g = rng.standard_normal((n, o, h, h), dtype=np.float32)
    return x, w, g, 2 * n * o * h * h * c * 9


def _jax_conv(jax):
    from jax import lax

    pad = [(PAD, PAD), (PAD, PAD)]
    return lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), pad, dimension_numbers=("NCHW", "OIHW", "NCHW")
    )


def _make(kind, layer):
    def make(be):
        x, w, g, _ = _data(layer)
        xo, torch, jax = be["xops"], be.get("torch"), be.get("jax")
        pad = [(PAD, PAD), (PAD, PAD)]
        X, W, G = xo.tensor(x), xo.tensor(w), xo.tensor(g)
        fns = {}
        if kind == "fwd":
            fns["numpy"] = lambda: np_forward(x, w)
            fns["xops"] = lambda: xo.convolution(X, W, padding=pad)
        elif kind == "dlhs":
            fns["numpy"] = lambda: np_grad_lhs(g, w)
            _, dlhs = xo.vjp(lambda a: xo.convolution(a, W, padding=pad), X)
            fns["xops"] = lambda: dlhs(G)[0]  # the backward pass only
        else:
            fns["numpy"] = lambda: np_grad_rhs(x, g)
            _, drhs = xo.vjp(lambda b: xo.convolution(X, b, padding=pad), W)
            fns["xops"] = lambda: drhs(G)[0]
        if torch is not None:
            tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g))
            F, grad = torch.nn.functional, torch.nn.grad
            fns["torch"] = {
                "fwd": lambda: F.conv2d(tx, tw, padding=PAD),
                "dlhs": lambda: grad.conv2d_input(tx.shape, tw, tg, padding=PAD),
                "drhs": lambda: grad.conv2d_weight(tx, tw.shape, tg, padding=PAD),
            }[kind]
        if jax is not None:
            jnp = jax.numpy
            conv = _jax_conv(jax)
            jx, jw, jg = (jnp.asarray(a) for a in (x, w, g))
            if kind == "fwd":
                fns["jax"] = lambda: conv(jx, jw)
                jitted = jax.jit(conv)
                fns["jax_jit"] = lambda: jitted(jx, jw)
            else:

                def vjp_half(x_, w_, g_):
                    if kind == "dlhs":
                        return jax.vjp(lambda a: conv(a, w_), x_)[1](g_)[0]
                    return jax.vjp(lambda b: conv(x_, b), w_)[1](g_)[0]

                pullback = (
                    jax.vjp(lambda a: conv(a, jw), jx)
                    if kind == "dlhs"
                    else jax.vjp(lambda b: conv(jx, b), jw)
                )[1]
                fns["jax"] = lambda: pullback(jg)[0]  # the backward pass only
                jitted = jax.jit(vjp_half)  # XLA drops the unused forward
                fns["jax_jit"] = lambda: jitted(jx, jw, jg)
        return fns

    return make


_DESC = {
    "fwd": "convolution forward",
    "dlhs": "input gradient (a convolution)",
    "drhs": "kernel gradient (a convolution)",
}
for _layer, (_n, _c, _h, _o) in LAYERS.items():
    _flop = 2 * _n * _o * _h * _h * _c * 9
    for _kind in ("fwd", "dlhs", "drhs"):
        workload(
            f"conv_{_kind}_{_layer}",
            f"{_DESC[_kind]}: x ({_n},{_c},{_h},{_h}) f32, w ({_o},{_c},3,3), pad 1, NCHW",
            rtol=1e-3,
            derived=gflops(_flop),
        )(_make(_kind, _layer))
