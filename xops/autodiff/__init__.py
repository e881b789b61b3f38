"""Reverse-mode autodiff on a tape of the ops that actually ran.

``xo.tensor(x, requires_grad=True)``, ``loss.backward()``, ``xo.grad``,
``xo.value_and_grad``, ``xo.vjp``, ``xo.no_grad()``. Gradient rules are written with
xops ops beside each op (``@primitive`` / ``.defvjp``), so they are recorded too when
a higher-order gradient is asked for.
"""

from .tape import (
    backward,
    enable_grad,
    grad,
    is_grad_enabled,
    no_grad,
    primitive,  # noqa: F401
    value_and_grad,
    vjp,
)
