"""The tape engine: recording, accumulation, modes, the functional API, higher order."""

import numpy as np
import pytest

import xops as xo
from xops.autodiff.tape import primitive


def test_backward_accumulates_into_leaves():
    x = xo.tensor([2.0], requires_grad=True)
    y = x * x * x
    assert y.requires_grad and y._node is not None
    y.backward()
    assert x.grad.tolist() == [12.0]  # 3 x^2
    (x * x * x).backward()
    assert x.grad.tolist() == [24.0]  # accumulates, as in PyTorch
    x.grad = None
    (x * 5.0).backward()
    assert x.grad.tolist() == [5.0]


def test_shared_subexpressions_sum_their_paths():
    x = xo.tensor([3.0], requires_grad=True)
    y = x * x
    z = y + y - x  # dz/dx = 4x - 1
    z.backward()
    assert x.grad.tolist() == [11.0]


def test_gradient_argument_and_non_scalar_roots():
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    y = xo.exponential(x)
    with pytest.raises(xo.SpecError, match="one-element"):
        y.backward()
    y.backward(xo.tensor([1.0, 0.5]))
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * [1.0, 0.5], rtol=1e-6)


def test_no_grad_detach_and_modes():
    x = xo.tensor([1.0], requires_grad=True)
    with xo.no_grad():
        y = x * 2.0
        assert not xo.is_grad_enabled()
        with xo.enable_grad():
            assert (x * 2.0).requires_grad
    assert xo.is_grad_enabled()
    assert not y.requires_grad and y._node is None
    d = x.detach()
    assert not d.requires_grad and not (d * 2.0).requires_grad

    @xo.no_grad()
    def f(t):
        return t * t

    assert not f(x).requires_grad


def test_only_float_and_complex_tensors_have_gradients():
    with pytest.raises(xo.SpecError, match="only floating-point and complex"):
        xo.tensor([1, 2], requires_grad=True)
    with pytest.raises(xo.SpecError, match="cannot differentiate with respect to a i64"):
        xo.grad(lambda t: t)(xo.tensor([1]))
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    assert not xo.compare(x, 1.5, "GT").requires_grad  # boolean results carry no gradient


def test_missing_rule_is_a_clear_error():
    @primitive("mystery_op")
    def mystery(t):
        return xo.tensor(np.asarray(t) * 2)

    x = xo.tensor([1.0], requires_grad=True)
    y = mystery(x) * 3.0
    with pytest.raises(xo.SpecError, match=r"^mystery_op \(grad\): no gradient rule"):
        y.backward()


def test_identity_outputs_never_become_their_own_parent():
    @primitive("identity_t")
    def ident(t):
        return t

    @ident.defvjp
    def _(g, out, t):
        return (g,)

    x = xo.tensor([2.0], requires_grad=True)
    y = ident(x)
    assert y is not x and x._node is None
    (y * y).backward()
    assert x.grad.tolist() == [4.0]


def test_python_control_flow_follows_the_path_taken():
    def f(x):
        y = x
        for _ in range(5):
            y = y * x if float(y.item()) < 10 else y + x
        return y

    # x = 2: 4, 8, 16 (*), then +2, +2 -> y = x^4 + 2x, dy/dx = 4x^3 + 2 = 34
    assert xo.grad(f)(xo.tensor([2.0])).tolist() == [34.0]


def test_deep_graphs_do_not_hit_the_recursion_limit():
    x = xo.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + x
    y.backward()
    assert x.grad.tolist() == [5001.0]


def test_grad_value_and_grad_argnums_has_aux():
    def f(x, y):
        return x * x * y, {"aux": x + y}

    vg = xo.value_and_grad(f, argnums=(0, 1), has_aux=True)
    (v, aux), g = vg(xo.tensor([3.0]), xo.tensor([2.0]))
    assert v.tolist() == [18.0] and aux["aux"].tolist() == [5.0]
    assert g[0].tolist() == [12.0] and g[1].tolist() == [9.0]
    assert xo.grad(lambda x: xo.sine(x))(xo.tensor([0.0])).tolist() == [1.0]
    gy = xo.grad(lambda x, y: x * y, argnums=1)(xo.tensor([3.0]), 4.0)
    assert gy.shape == () and gy.item() == 3.0  # a Python scalar argument is 0-d


def test_vjp_with_pytrees():
    def f(p):
        return {"s": p["a"] * p["b"], "d": p["a"] - p["b"]}

    primal = {"a": xo.tensor([1.0, 2.0]), "b": xo.tensor([3.0, 5.0])}
    out, fn = xo.vjp(f, primal)
    assert out["s"].tolist() == [3.0, 10.0]
    (ct,) = fn({"d": xo.tensor([1.0, 1.0]), "s": xo.tensor([1.0, 2.0])})  # sorted keys: d, s
    assert ct["a"].tolist() == [1 + 3.0, 1 + 2 * 5.0]
    assert ct["b"].tolist() == [-1 + 1.0, -1 + 2 * 2.0]


def test_higher_order_nested_grad():
    f = lambda x: x * x * x  # noqa: E731
    x = xo.tensor([2.0])
    assert xo.grad(f)(x).tolist() == [12.0]
    assert xo.grad(xo.grad(f))(x).tolist() == [12.0]  # 6x
    assert xo.grad(xo.grad(xo.grad(f)))(x).tolist() == [6.0]
    g = lambda x: xo.sine(x) * x  # noqa: E731  d2/dx2 = 2cos x - x sin x
    np.testing.assert_allclose(
        xo.grad(xo.grad(g))(xo.tensor([0.7])).numpy(),
        [2 * np.cos(0.7) - 0.7 * np.sin(0.7)],
        rtol=1e-6,
    )


def test_backward_create_graph():
    x = xo.tensor([3.0], requires_grad=True)
    (x * x * x).backward(create_graph=True)
    first = x.grad  # 3 x^2 = 27, still on the tape
    assert first.requires_grad and first.tolist() == [27.0]
    x.grad = None
    first.backward()
    assert x.grad.tolist() == [18.0]  # 6x


def test_hessian_vector_product():
    """H v for f(x) = sum(sin(x) * x^2) by nesting grad in grad (forward-over-reverse is
    not needed: reverse-over-reverse on the tape). Closed form: H is diagonal with
    (2 - x^2) sin x + 4 x cos x."""
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])

    def f(t):
        return xo.reduce(xo.sine(t) * t * t, 0.0, [0], xo.add)

    def grad_dot_v(t):
        return xo.reduce(xo.grad(f)(t) * xo.tensor(v), 0.0, [0], xo.add)

    hv = xo.grad(grad_dot_v)(xo.tensor(x))
    want = ((2 - x * x) * np.sin(x) + 4 * x * np.cos(x)) * v
    np.testing.assert_allclose(hv.numpy(), want, rtol=1e-12)
