"""Optimizers: SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop and Adagrad.

The update rules are PyTorch's (``torch.optim``, default flags), written with xops
elementwise ops under ``xo.no_grad()``. A step computes each parameter's new value as
a new tensor and rebinds the parameter to it with :func:`xops.nn.assign_`, so the
parameter objects (in the model, in ``param_groups``, in the user's hands) keep their
identity, as PyTorch users expect; every tensor computed earlier keeps its value.

Parameters without a ``.grad`` are skipped. Hyper-parameters live in
``param_groups`` (a list of dicts), which learning-rate schedulers change.

``state_dict()`` / ``load_state_dict()`` follow PyTorch: ``{"state": {index: {...}},
"param_groups": [{hyper-parameters..., "params": [index, ...]}]}``, a parameter's
index being its position over all groups in order. The state holds tensors (immutable
values, so the dict is a snapshot) and plain numbers; ``xo.nn.save`` / ``xo.nn.load``
store it in an ``.npz`` file.
"""

import math

import numpy as np

from .. import device as _device
from ..autodiff.tape import no_grad
from ..dtypes import as_dtype
from ..ops.elementwise import add, divide, maximum, multiply, sqrt, subtract
from ..tensor import Tensor, _wrap, tensor
from ..nn.parameter import assign_, host_floats

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class Optimizer:
    """Base class: ``param_groups``, per-parameter ``state``, ``zero_grad()``,
    ``step()``. ``params`` is an iterable of parameters or of dicts
    ``{"params": [...], "lr": ..., ...}`` (per-group hyper-parameters)."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}  # id(param) -> dict of state tensors
        if isinstance(params, Tensor):
            raise TypeError(
                "params must be an iterable of Tensors (e.g. model.parameters()), "
                "got a single Tensor"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer params must be Tensors, got {type(p).__name__}")
            if not p.requires_grad or p._node is not None:
                raise ValueError(
                    f"optimizer params must be leaf tensors that require a "
                    f"gradient, got {p.type}"
                    f"{' (an op output)' if p._node is not None else ''}"
                )
            if id(p) in seen:
                raise ValueError("a parameter appears in more than one parameter group")
            seen.add(id(p))
        group["params"] = params
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's ``.grad`` to None (``set_to_none=False``: to zeros)."""
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = multiply(p.grad.detach(), 0)

    def step(self, closure=None):
        """One update of every parameter that has a ``.grad``. ``closure`` (optional)
        re-evaluates the loss with gradients; its value is returned."""
        loss = None
        if closure is not None:
            from ..autodiff.tape import enable_grad

            with enable_grad():
                loss = closure()
        # (overflow to inf is the IEEE result here, not a warning: the host updates)
        with no_grad(), np.errstate(all="ignore"):
            for group in self.param_groups:
                todo = []
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad
                    if g.shape != p.shape or g.dtype is not p.dtype:
                        raise ValueError(
                            f"{type(self).__name__}.step: .grad {g.type} does "
                            f"not match its parameter {p.type}"
                        )
                    todo.append((p, g, self.state.setdefault(id(p), {})))
                for p, new in self._update_group(todo, group):
                    assign_(p, new)
        return loss

    def _update_group(self, todo, group):
        """``[(p, new p)]`` for the ``(p, grad, state)`` of one group (all checked): one
        :meth:`_update` each, unless the optimizer updates several at once."""
        return [(p, self._update(p.detach(), g.detach(), state, group)) for p, g, state in todo]

    def _update(self, p, g, state, group):
        raise NotImplementedError

    # -- state -----------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` as PyTorch's:
        each group's hyper-parameters (``lr`` as a scheduler left it, ``initial_lr``
        once a scheduler was attached) with ``"params"`` as the indices of its
        parameters, counted over all groups in order; the state of each parameter that
        has one (SGD's ``momentum_buffer``; Adam's ``step``, ``exp_avg``,
        ``exp_avg_sq``) under its index. Tensors are shared, not copied: they are
        immutable, so later steps never change this snapshot."""
        groups, state, index = [], {}, 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = list(range(index, index + len(group["params"])))
            for i, p in zip(packed["params"], group["params"]):
                if self.state.get(id(p)):
                    state[i] = dict(self.state[id(p)])
            index += len(group["params"])
            groups.append(packed)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a :meth:`state_dict` (from this optimizer type, as saved, or read back
        by ``xo.nn.load``): hyper-parameters of every group, and the state of each
        parameter by index. The groups must match this optimizer's in number and size,
        and each state tensor its parameter's shape and element type (a ValueError
        names every mismatch; nothing changes unless everything fits)."""
        saved = list(state_dict["param_groups"])
        name = type(self).__name__
        if len(saved) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the state has {len(saved)} parameter "
                f"groups, this optimizer {len(self.param_groups)}"
            )
        params = {}
        for k, (old, group) in enumerate(zip(saved, self.param_groups)):
            if len(old["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: group {k} has "
                    f"{len(old['params'])} parameters in the state, "
                    f"{len(group['params'])} in this optimizer"
                )
            params.update((int(i), p) for i, p in zip(old["params"], group["params"]))
        state, problems = {}, []
        for i, entries in state_dict["state"].items():
            p = params.get(int(i))
            if p is None:
                problems.append(f"state for parameter index {i}, which no group lists")
                continue
            state[id(p)] = {
                k: _state_value(v, p, f"state[{i}][{k!r}]", problems) for k, v in entries.items()
            }
        if problems:
            raise ValueError(f"{name}.load_state_dict: " + "; ".join(problems))
        for old, group in zip(saved, self.param_groups):
            hyper = {k: v for k, v in old.items() if k != "params"}
            hyper["params"] = group["params"]
            group.clear()
            group.update(hyper)
        self.state = state


def _state_value(v, p, where, problems):
    """A loaded state entry: a tensor of p's shape and element type (a NumPy array is
    taken in its own type), or a plain value (the step count as a Python int)."""
    if isinstance(v, (np.ndarray, np.generic)):
        v = tensor(np.asarray(v), as_dtype(np.asarray(v).dtype))
    if not isinstance(v, Tensor):
        return v
    v = v.detach()
    if v.ndim == 0 and v.dtype.kind in ("si", "ui"):
        return int(v.item())  # a step count saved as a tensor
    if v.shape != p.shape or v.dtype is not p.dtype:
        problems.append(f"{where} is {v.type}, its parameter {p.type}")
    return v


def _check(name, value, low=0.0):
    if not value >= low:
        raise ValueError(f"invalid {name}: {value} (must be >= {low})")


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD``::

    g = grad + weight_decay * p
    buf = g (first step), else momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (nesterov)  or  buf (momentum > 0)
    p = p - lr * g
    """

    def __init__(
        self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False
    ):
        _check("lr", lr)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
            ),
        )

    def _update(self, p, g, state, group):
        host = host_floats(p, g)
        if host is not None:
            return self._update_host(*host, p._dtype, state, group)
        wd, mom = group["weight_decay"], group["momentum"]
        buf = state.get("momentum_buffer") if mom else None
        fused = _fused("sgd", p, g, *(() if buf is None else (buf,)))
        if fused is not None:
            damp, lr, nesterov = group["dampening"], group["lr"], group["nesterov"]
            b = None if buf is None else buf._value
            outs = fused(p._value, b, g._value, lr, mom, damp, wd, nesterov)
            if outs is not None:
                if mom:
                    state["momentum_buffer"] = _wrap(outs[1], p._dtype)
                return _wrap(outs[0], p._dtype)
        if wd:
            g = add(g, multiply(p, wd))
        if mom:
            if buf is None:
                buf = g
            else:
                buf = add(
                    multiply(buf, mom),
                    multiply(g, 1 - group["dampening"]) if group["dampening"] else g,
                )
            state["momentum_buffer"] = buf
            g = add(g, multiply(buf, mom)) if group["nesterov"] else buf
        return subtract(p, multiply(g, group["lr"]))

    @staticmethod
    def _update_host(p, g, dt, state, group):
        """:meth:`_update` on f32 / f64 host arrays: the same steps in the same order,
        each a NumPy ufunc that rounds once to the element type, as the xops op does
        (a hyper-parameter is rounded to the element type first, as a weak scalar
        operand is), without an op dispatch per step."""
        c = dt.np.type
        wd, mom = group["weight_decay"], group["momentum"]
        if wd:
            g = g + p * c(wd)
        if mom:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g
            else:
                damp = group["dampening"]
                buf = buf._value * c(mom) + (g * c(1 - damp) if damp else g)
            state["momentum_buffer"] = _wrap(buf, dt)
            g = g + buf * c(mom) if group["nesterov"] else buf
        return _wrap(p - g * c(group["lr"]), dt)


def _fused(name, p, *others):
    """The fused update ``name`` of the device that ``p`` lives on (one kernel per
    parameter instead of an op per step; xops.kernels.cuda registers them in
    ``device._updates``), when ``p`` is f32 / f64 off the CPU and ``others`` are tensors of
    its type, shape and device; else None (the op-by-op update, with its checks)."""
    dev = p.device
    if dev.kind == "cpu" or p._dtype.name not in ("f32", "f64"):
        return None
    for o in others:
        if o._dtype != p._dtype or o.shape != p.shape or o.device != dev:
            return None
    return _device._updates.get((dev.kind, name))


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), as ``torch.optim.Adam``::

    g = grad + weight_decay * p                 (L2 penalty; see AdamW)
    m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    ``amsgrad=True`` (Reddi et al., 2018, as PyTorch's) divides by the largest v so far
    in place of v (state ``max_exp_avg_sq``).
    """

    _decoupled = False

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False
    ):
        _check("lr", lr)
        _check("eps", eps)
        _check("weight_decay", weight_decay)
        b1, b2 = betas
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"invalid betas {betas}: each must be in [0, 1)")
        defaults = dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(defaults, amsgrad=bool(amsgrad)))

    def _update_group(self, todo, group):
        """Parameters on a device with a multi-tensor kernel (``device._updates``
        "adam_many"), f32 / f64 with moments of their type, shape and device, are updated
        together, a launch per several parameters (batched by device, type, step number
        and first step; the bits of :meth:`_update`'s); the others one by one."""
        if group.get("amsgrad"):  # (the multi-tensor kernels keep no running maximum)
            return super()._update_group(todo, group)
        batches, rest = {}, []
        for p, g, state in todo:
            m, v = state.get("exp_avg"), state.get("exp_avg_sq")
            moments = [s for s in (m, v) if s is not None]
            if p.device.kind != "cpu" and len(moments) != 1:
                if _fused("adam_many", p, g, *moments) is not None:
                    key = (str(p.device), p._dtype.name, state.get("step", 0), m is None)
                    batches.setdefault(key, []).append((p, g, state))
                    continue
            rest.append((p, g, state))
        done = []
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for (_, _, t, first), items in batches.items():
            p0 = items[0][0]
            update = _fused("adam_many", p0)
            moments = (lambda s: (None, None)) if first else (
                lambda s: (s["exp_avg"]._value, s["exp_avg_sq"]._value)
            )  # fmt: skip
            arrays = [(p._value, *moments(s), g._value) for p, g, s in items]
            news = update(arrays, lr, b1, b2, eps, wd, self._decoupled, t + 1)
            if news is None:
                rest += items
                continue
            dt = p0._dtype
            for (p, _, state), (np_, m, v) in zip(items, news):
                state.update(step=t + 1, exp_avg=_wrap(m, dt), exp_avg_sq=_wrap(v, dt))
                done.append((p, _wrap(np_, dt)))
        return done + super()._update_group(rest, group)

    def _update(self, p, g, state, group):
        m, v = state.get("exp_avg"), state.get("exp_avg_sq")
        host = host_floats(p, g, *(s for s in (m, v) if s is not None))
        if host is not None:
            return self._update_host(host[0], host[1], m, v, p._dtype, state, group)
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        t = state.get("step", 0) + 1
        ams = group.get("amsgrad", False)
        fused = None if ams else _fused("adam", p, g, *(s for s in (m, v) if s is not None))
        if fused is not None:
            arrays = (s._value if s is not None else None for s in (p, m, v))
            outs = fused(*arrays, g._value, lr, b1, b2, eps, wd, self._decoupled, t)
            if outs is not None:
                p, m, v = (_wrap(o, p._dtype) for o in outs)
                state.update(step=t, exp_avg=m, exp_avg_sq=v)
                return p
        if wd:
            if self._decoupled:
                p = multiply(p, 1 - lr * wd)
            else:
                g = add(g, multiply(p, wd))
        m = multiply(g, 1 - b1) if m is None else add(multiply(m, b1), multiply(g, 1 - b1))
        g2 = multiply(g, g)
        v = multiply(g2, 1 - b2) if v is None else add(multiply(v, b2), multiply(g2, 1 - b2))
        state.update(step=t, exp_avg=m, exp_avg_sq=v)
        if ams:
            top = state.get("max_exp_avg_sq")
            v = v if top is None else maximum(top, v)
            state["max_exp_avg_sq"] = v
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        denom = add(divide(sqrt(v), math.sqrt(bc2)), eps)
        return subtract(p, multiply(divide(m, denom), lr / bc1))

    def _update_host(self, p, g, m, v, dt, state, group):
        """:meth:`_update` on f32 / f64 host arrays: the same steps in the same order,
        each a NumPy ufunc rounding once to the element type as the op does, every
        hyper-parameter rounded to the element type first (a weak scalar operand), so
        the bits equal the op-by-op update's; ~11 op dispatches per parameter fewer."""
        c = dt.np.type
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd:
            if self._decoupled:
                p = p * c(1 - lr * wd)
            else:
                g = g + p * c(wd)
        t = state.get("step", 0) + 1
        m = g * c(1 - b1) if m is None else m._value * c(b1) + g * c(1 - b1)
        g2 = g * g
        v = g2 * c(1 - b2) if v is None else v._value * c(b2) + g2 * c(1 - b2)
        state.update(step=t, exp_avg=_wrap(m, dt), exp_avg_sq=_wrap(v, dt))
        if group.get("amsgrad"):
            top = state.get("max_exp_avg_sq")
            v = v if top is None else np.maximum(top._value, v)
            state["max_exp_avg_sq"] = _wrap(v, dt)
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        denom = np.sqrt(v) / c(math.sqrt(bc2)) + c(eps)
        return _wrap(p - m / denom * c(lr / bc1), dt)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as
    ``torch.optim.AdamW``: ``p = p * (1 - lr * weight_decay)`` before the Adam step
    (default weight_decay 0.01)."""

    _decoupled = True

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False
    ):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


class RMSprop(Optimizer):
    """RMSprop, as ``torch.optim.RMSprop``::

    g = grad + weight_decay * p
    s = alpha s + (1 - alpha) g^2                   (s starts at 0)
    d = sqrt(s - a^2) + eps, a = alpha a + (1 - alpha) g  (centered)  or  sqrt(s) + eps
    buf = momentum buf + g / d;  p = p - lr buf     (momentum > 0)  or  p = p - lr g / d
    """

    def __init__(
        self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
        centered=False,
    ):  # fmt: skip
        for name, value in (("lr", lr), ("alpha", alpha), ("eps", eps),
                            ("weight_decay", weight_decay), ("momentum", momentum)):  # fmt: skip
            _check(name, value)
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(defaults, momentum=momentum, centered=bool(centered)))

    def _update(self, p, g, state, group):
        lr, a, eps, wd, mom = (group[k] for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
        if wd:
            g = add(g, multiply(p, wd))
        g2 = multiply(multiply(g, g), 1 - a)
        sq = state.get("square_avg")
        sq = g2 if sq is None else add(multiply(sq, a), g2)
        state["step"] = state.get("step", 0) + 1
        state["square_avg"] = sq
        if group["centered"]:
            ga = state.get("grad_avg")
            ga = multiply(g, 1 - a) if ga is None else add(multiply(ga, a), multiply(g, 1 - a))
            state["grad_avg"] = ga
            sq = subtract(sq, multiply(ga, ga))
        step = divide(g, add(sqrt(sq), eps))
        if mom:
            buf = state.get("momentum_buffer")
            step = step if buf is None else add(multiply(buf, mom), step)
            state["momentum_buffer"] = step
        return subtract(p, multiply(step, lr))


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad``: at step t, with the sum of squared gradients
    starting at ``initial_accumulator_value``::

    g = grad + weight_decay * p;  s = s + g^2
    p = p - lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)
    """

    def __init__(
        self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
        eps=1e-10,
    ):  # fmt: skip
        for name, value in (("lr", lr), ("lr_decay", lr_decay), ("weight_decay", weight_decay),
                            ("initial_accumulator_value", initial_accumulator_value),
                            ("eps", eps)):  # fmt: skip
            _check(name, value)
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps)
        super().__init__(
            params, dict(defaults, initial_accumulator_value=initial_accumulator_value)
        )

    def _update(self, p, g, state, group):
        wd = group["weight_decay"]
        if wd:
            g = add(g, multiply(p, wd))
        t = state.get("step", 0) + 1
        total = state.get("sum")
        if total is None:
            total = add(multiply(p, 0.0), group["initial_accumulator_value"])
        total = add(total, multiply(g, g))
        state.update(step=t, sum=total)
        clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
        return subtract(p, multiply(divide(g, add(sqrt(total), group["eps"])), clr))
