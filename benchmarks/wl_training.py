"""Training workloads: one SGD step of a small CNN, forward + backward + update, at
batch 32 and 64, written two ways in xops (issue 15: <= 0.8x PyTorch eager, <= 0.5x JAX
eager).

Input (N, 1, 28, 28) f32, labels (N,). conv 1->16 3x3 pad 1 (+bias) -> relu ->
max pool 2 -> conv 16->32 3x3 pad 1 (+bias) -> relu -> max pool 2 -> batch norm (32,
training mode: batch statistics) -> flatten 1568 -> dense 10 -> softmax cross-entropy
(mean) -> backward -> plain SGD (lr 0.01) on all eight parameter tensors.

Every backend starts each call from the same initial weights (xops and PyTorch rebind
/ copy them back first, JAX is functional) so the workload is stationary; each returns
the loss and conv1's kernel step (new - old) / lr = -gradient, both checked against the
NumPy reference: the losses agree, and so does the gradient that flowed back through
every layer.

* numpy: the step written by hand (sliding_window_view + einsum for the convolutions
  and their two gradients, reshapes for the pooling, the batch-norm formulas);
* xops, ``train_cnn_step_nn_*``: ``xo.nn`` modules, ``F.softmax_cross_entropy``,
  ``loss.backward()``, ``xo.optim.SGD.step()`` (eager, tape autodiff);
* xops, ``train_cnn_step_spec_*``: the same model in spec ops (``xo.convolution``,
  ``xo.reduce_window``, ``xo.batch_norm_training``, ``xo.dot_general``, ``xo.reduce``, ...),
  ``xo.value_and_grad`` and the update in ``xo.subtract`` / ``xo.multiply``;
* torch: ``torch.nn`` modules, ``loss.backward()``, ``torch.optim.SGD`` (eager);
* jax: ``jax.value_and_grad`` of the same model in ``jax.lax`` ops plus a
  ``tree_map`` update, eager (op by op) and under ``jax.jit``.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .workloads import _rng, dim, workload

LR, EPS = 0.01, 1e-5


def _init(n):
    """Initial weights (PyTorch's default init ranges) and one batch of ``n`` images of
    28x28 (8x8 in the smoke mode), as NumPy."""
    rng = _rng()
    side = dim(28, 8)
    flat = 32 * (side // 4) ** 2

    def u(shape, fan_in):
        b = 1 / np.sqrt(fan_in)
        return rng.uniform(-b, b, shape).astype(np.float32)

    params = dict(
        w1=u((16, 1, 3, 3), 9),
        b1=u(16, 9),
        w2=u((32, 16, 3, 3), 144),
        b2=u(32, 144),
        gamma=np.ones(32, np.float32),
        beta=np.zeros(32, np.float32),
        wd=u((10, flat), flat),
        bd=u(10, flat),
    )
    x = rng.standard_normal((n, 1, side, side), dtype=np.float32)
    y = rng.integers(0, 10, n)
    return params, x, y


# ---------------------------------------------------------------------------------------
# NumPy: the reference, forward and backward by hand
# ---------------------------------------------------------------------------------------


def _win(x):
    return sliding_window_view(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]), (3, 3), axis=(2, 3))


def _conv(x, w, b):
    return np.einsum("nchwij,ocij->nohw", _win(x), w, optimize=True) + b[None, :, None, None]


def _conv_back(x, w, g):
    dw = np.einsum("nchwij,nohw->ocij", _win(x), g, optimize=True)
    dx = np.einsum("nohwij,ocij->nchw", _win(g), w[:, :, ::-1, ::-1], optimize=True)
    return dx, dw, g.sum(axis=(0, 2, 3))


def _pool(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def _pool_back(x, out, g):
    """Each window's cotangent to its first maximum (row-major), as select_and_scatter."""
    n, c, h, w = x.shape
    win = (
        x.reshape(n, c, h // 2, 2, w // 2, 2)
        .transpose(0, 1, 2, 4, 3, 5)
        .reshape(n, c, h // 2, w // 2, 4)
    )
    first = np.argmax(win == out[..., None], axis=-1)
    dwin = (np.arange(4) == first[..., None]) * g[..., None]
    return dwin.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(x.shape)


def np_step(p, x, y):
    """(loss, (new w1 - w1) / lr) of one SGD step from parameters ``p``."""
    n = x.shape[0]
    c1 = _conv(x, p["w1"], p["b1"])
    r1 = np.maximum(c1, 0)
    p1 = _pool(r1)
    c2 = _conv(p1, p["w2"], p["b2"])
    r2 = np.maximum(c2, 0)
    p2 = _pool(r2)
    mean = p2.mean(axis=(0, 2, 3), keepdims=True)
    var = p2.var(axis=(0, 2, 3), keepdims=True)
    inv = 1 / np.sqrt(var + EPS)
    xhat = (p2 - mean) * inv
    bn = xhat * p["gamma"][None, :, None, None] + p["beta"][None, :, None, None]
    flat = bn.reshape(n, -1)
    logits = flat @ p["wd"].T + p["bd"]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(n), y].mean()
    # backward
    dlogits = np.exp(logp)
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    grads = dict(wd=dlogits.T @ flat, bd=dlogits.sum(0))
    dbn = (dlogits @ p["wd"]).reshape(bn.shape)
    grads["gamma"] = (dbn * xhat).sum(axis=(0, 2, 3))
    grads["beta"] = dbn.sum(axis=(0, 2, 3))
    dxhat = dbn * p["gamma"][None, :, None, None]
    m = p2.size // p2.shape[1]
    dp2 = (
        inv
        / m
        * (
            m * dxhat
            - dxhat.sum(axis=(0, 2, 3), keepdims=True)
            - xhat * (dxhat * xhat).sum(axis=(0, 2, 3), keepdims=True)
        )
    )
    dr2 = _pool_back(r2, p2, dp2)
    dc2 = dr2 * (c2 > 0)
    dp1, grads["w2"], grads["b2"] = _conv_back(p1, p["w2"], dc2)
    dr1 = _pool_back(r1, p1, dp1)
    dc1 = dr1 * (c1 > 0)
    _, grads["w1"], grads["b1"] = _conv_back(x, p["w1"], dc1)
    new = {k: (v - LR * grads[k]).astype(np.float32) for k, v in p.items()}
    return np.float32(loss), (new["w1"] - p["w1"]) / LR


# ---------------------------------------------------------------------------------------
# xops, PyTorch, JAX
# ---------------------------------------------------------------------------------------

_ORDER = ["w1", "b1", "w2", "b2", "gamma", "beta", "wd", "bd"]


def _xops_step(xo, params, x, y):
    nn, F = xo.nn, xo.nn.functional
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.BatchNorm2d(32),
        nn.Flatten(),
        nn.Linear(params["wd"].shape[1], 10),
    )
    mine = [
        model[0].weight,
        model[0].bias,
        model[3].weight,
        model[3].bias,
        model[6].weight,
        model[6].bias,
        model[8].weight,
        model[8].bias,
    ]
    start = [xo.tensor(params[k]) for k in _ORDER]
    opt = xo.optim.SGD(mine, lr=LR)
    X, Y = xo.tensor(x), xo.tensor(y)

    def step():
        for p, v in zip(mine, start):  # back to the initial weights (no copy: immutable)
            nn.assign_(p, v)
        loss = F.softmax_cross_entropy(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return [loss.item(), (mine[0] - start[0]) / LR]

    return step


def _xops_spec_step(xo, params, x, y):
    """The same step in spec ops and ``xo.value_and_grad``."""
    n, pad, win = x.shape[0], [(1, 1), (1, 1)], [1, 1, 2, 2]
    X, onehot = xo.tensor(x), xo.tensor(np.eye(10, dtype=np.float32)[y])
    start = [xo.tensor(params[k]) for k in _ORDER]

    def bias(h, b):
        return xo.add(h, xo.broadcast_in_dim(b, [1], h.shape))

    def conv_relu_pool(h, w, b):
        h = xo.maximum(bias(xo.convolution(h, w, padding=pad), b), 0.0)
        return xo.reduce_window(h, float("-inf"), win, win, body=xo.maximum)

    def loss_fn(w1, b1, w2, b2, gamma, beta, wd, bd):
        h = conv_relu_pool(conv_relu_pool(X, w1, b1), w2, b2)
        h = xo.batch_norm_training(h, gamma, beta, EPS, 1)[0]
        flat = xo.reshape(h, [n, wd.shape[1]])
        logits = xo.dot_general(
            flat, wd, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1]
        )
        logits = xo.add(logits, xo.broadcast_in_dim(bd, [1], logits.shape))
        top = xo.reduce(logits, float("-inf"), [1], xo.maximum)
        z = xo.subtract(logits, xo.broadcast_in_dim(top, [0], logits.shape))
        lse = xo.log(xo.reduce(xo.exponential(z), 0.0, [1], xo.add))
        logp = xo.subtract(z, xo.broadcast_in_dim(lse, [0], logits.shape))
        picked = xo.reduce(xo.multiply(logp, onehot), 0.0, [0, 1], xo.add)
        return xo.negate(xo.divide(picked, float(n)))

    value_and_grad = xo.value_and_grad(loss_fn, argnums=tuple(range(len(_ORDER))))

    def step():
        loss, grads = value_and_grad(*start)
        new = [xo.subtract(p, xo.multiply(g, LR)) for p, g in zip(start, grads)]
        return [loss.item(), xo.divide(xo.subtract(new[0], start[0]), LR)]

    return step


def _torch_step(torch, params, x, y):
    tnn = torch.nn
    model = tnn.Sequential(
        tnn.Conv2d(1, 16, 3, padding=1),
        tnn.ReLU(),
        tnn.MaxPool2d(2),
        tnn.Conv2d(16, 32, 3, padding=1),
        tnn.ReLU(),
        tnn.MaxPool2d(2),
        tnn.BatchNorm2d(32, eps=EPS),
        tnn.Flatten(),
        tnn.Linear(params["wd"].shape[1], 10),
    )
    mine = [
        model[0].weight,
        model[0].bias,
        model[3].weight,
        model[3].bias,
        model[6].weight,
        model[6].bias,
        model[8].weight,
        model[8].bias,
    ]
    start = [torch.from_numpy(params[k].copy()) for k in _ORDER]
    opt = torch.optim.SGD(mine, lr=LR)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = tnn.functional.cross_entropy

    def step():
        with torch.no_grad():
            for p, v in zip(mine, start):
                p.copy_(v)
        loss = loss_fn(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return [loss.detach(), (mine[0].detach() - start[0]) / LR]

    return step


def _jax_steps(jax, params, x, y):
    import jax.numpy as jnp
    from jax import lax

    def conv(h, w, b):
        out = lax.conv_general_dilated(
            h, w, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        return out + b[None, :, None, None]

    def pool(h):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(p, x, y):
        h = pool(jax.nn.relu(conv(x, p["w1"], p["b1"])))
        h = pool(jax.nn.relu(conv(h, p["w2"], p["b2"])))
        mean = h.mean(axis=(0, 2, 3), keepdims=True)
        var = ((h - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        h = (h - mean) / jnp.sqrt(var + EPS) * p["gamma"][None, :, None, None] + p["beta"][
            None, :, None, None
        ]
        logits = h.reshape(h.shape[0], -1) @ p["wd"].T + p["bd"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()

    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        new = jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g)
        return [loss, (new["w1"] - p["w1"]) / LR]

    P = {k: jnp.asarray(v) for k, v in params.items()}
    X, Y = jnp.asarray(x), jnp.asarray(y)
    jitted = jax.jit(step)
    # JAX dispatches asynchronously and the runner blocks only on a result that has
    # block_until_ready (this one is a list): wait here, or a sample would time the
    # dispatch alone and queue up ever more unfinished steps
    return (lambda: jax.block_until_ready(step(P, X, Y))), (
        lambda: jax.block_until_ready(jitted(P, X, Y))
    )


def _register(style, n):
    @workload(
        f"train_cnn_step_{style}_b{n}",
        f"SGD step of a 2-conv CNN, ({n},1,28,28) f32: fwd+bwd+update, xops in "
        + ("xo.nn modules" if style == "nn" else "spec ops + xo.value_and_grad"),
        rtol=2e-3,
        derived=lambda s: f"{n / s:.0f} img/s",
    )
    def make(be):
        params, x, y = _init(dim(n, 4))
        fns = {"numpy": lambda: list(np_step(params, x, y))}
        xo, torch, jax = be["xops"], be.get("torch"), be.get("jax")
        import xops.nn  # noqa: F401  (xo.nn / xo.optim: subpackages)
        import xops.optim  # noqa: F401

        fns["xops"] = (_xops_step if style == "nn" else _xops_spec_step)(xo, params, x, y)
        if torch is not None:
            fns["torch"] = _torch_step(torch, params, x, y)
        if jax is not None:
            fns["jax"], fns["jax_jit"] = _jax_steps(jax, params, x, y)
        return fns

    return make


for _style in ("nn", "spec"):
    for _n in (32, 64):
        _register(_style, _n)
