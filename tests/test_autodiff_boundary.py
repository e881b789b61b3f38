"""Every way data enters xo.grad / vjp / backward either differentiates correctly or
raises a clear error; building tensors from tensors keeps the graph; no path returns a
zero gradient where the true one is not zero; pickling keeps requires_grad."""

import pickle

import numpy as np
import pytest

import xops as xo
import xops.numpy as xnp


def _sum(t):
    return xo.reduce(t, xo.tensor(0, t.dtype), list(range(t.ndim)), xo.add)


def _sq(x):
    t = xo.tensor(x)
    return _sum(t * t)


# -- primals ---------------------------------------------------------------------------------


def test_lists_arrays_and_scalars_differentiate():
    g = xo.grad(_sq)([0.5, 1.0])  # was zeros: a list of floats is one f32[2] input
    assert isinstance(g, xo.Tensor) and g.dtype == xo.float32 and g.tolist() == [1.0, 2.0]
    g = xo.grad(_sq)([[1.0, 2.0], [3.0, 4.0]])
    assert g.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    g = xo.grad(lambda x: _sum(x * x))(np.array([0.5, 1.0]))
    assert g.dtype == xo.float64 and g.tolist() == [1.0, 2.0]
    g = xo.grad(lambda x: x * x * x)(2.0)
    assert g.shape == () and g.item() == 12.0
    g = xo.grad(lambda x: x * x)(np.float64(3.0))
    assert g.dtype == xo.float64 and g.item() == 6.0
    v, g = xo.value_and_grad(lambda a, b: _sum(a * b), argnums=(0, 1))([1.0, 2.0], [3.0, 4.0])
    assert v.item() == 11.0 and g[0].tolist() == [3.0, 4.0] and g[1].tolist() == [1.0, 2.0]


def test_nested_containers_are_pytrees():
    def f(p):
        return _sum(p["w"] * p["x"][0]) + p["x"][1] * 2.0

    g = xo.grad(f)({"w": [1.0, 2.0], "x": ([3.0, 4.0], 5.0)})
    assert g["w"].tolist() == [3.0, 4.0] and g["x"][0].tolist() == [1.0, 2.0]
    assert g["x"][1].item() == 2.0 and isinstance(g["x"], tuple)
    w, b = xo.tensor([1.0, 2.0]), xo.tensor(0.5)
    gw, gb = xo.grad(lambda wb: _sum(wb[0] * wb[0]) + wb[1])([w, b])
    assert gw.tolist() == [2.0, 4.0] and gb.item() == 1.0


@pytest.mark.parametrize("bad", [3, [1, 2], np.array([1, 2]), True, xo.tensor([1, 2], "i32")])
def test_integer_inputs_are_an_error(bad):
    with pytest.raises(
        xo.SpecError,
        match="cannot differentiate with respect to a .*(i64|i32|"
        "i1).*only float and complex inputs",
    ):
        xo.grad(lambda x: _sum(xo.convert(x, "f32")))(bad)


def test_cotangents_take_arrays_lists_and_numbers():
    _, vjp_fn = xo.vjp(lambda x: (x * 2.0, x * 3.0), xo.tensor([1.0, 2.0]))
    (g,) = vjp_fn(([1, 1], np.array([1.0, 0.0])))
    assert g.tolist() == [5.0, 2.0]
    _, vjp_fn = xo.vjp(lambda x: _sum(x * x), [1.0, 2.0])
    assert vjp_fn(2.0)[0].tolist() == [4.0, 8.0]
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward([1.0, 0.5])
    assert x.grad.tolist() == [2.0, 2.0]
    (x * x).backward(np.ones(2))
    assert x.grad.tolist() == [4.0, 6.0]
    with pytest.raises(xo.SpecError, match="shape of the output"):
        (x * x).backward([1.0, 2.0, 3.0])


# -- tensors built from tensors keep the graph --------------------------------------------------


def test_tensor_of_tensors_keeps_the_graph():
    a = xo.tensor(1.0, requires_grad=True)
    b = xo.tensor(2.0, requires_grad=True)
    c = xo.tensor([[a, b], [b, 3.0]])
    assert c.requires_grad and c.tolist() == [[1.0, 2.0], [2.0, 3.0]]
    _sum(c * c).backward()  # a^2 + 2 b^2 + 9
    assert a.grad.item() == 2.0 and b.grad.item() == 8.0
    assert xo.grad(lambda x: _sum(xo.tensor([x, x * x])))(3.0).item() == 7.0
    assert xo.grad(lambda x: _sum(xnp.asarray([x, 2.0 * x])))(3.0).item() == 3.0
    assert xo.grad(lambda x: _sum(xnp.stack([x, x * x])))(3.0).item() == 7.0
    assert xo.grad(lambda x: _sum(np.stack([x, x * x])))(3.0).item() == 7.0
    assert xo.grad(lambda x: xo.tensor(x, "f64") * 2.0)(3.0).item() == 2.0
    assert xo.grad(lambda x: xo.tensor(x) * 2.0)(3.0).item() == 2.0
    assert xo.grad(lambda x: _sum(xo.Tensor([x, x])))(3.0).item() == 2.0
    with xo.no_grad():  # nothing is recorded: a plain constant
        assert not xo.tensor([a, b]).requires_grad
    with pytest.raises(TypeError, match="ragged"):
        xo.tensor([a, xo.tensor([1.0, 2.0], requires_grad=True)])


# -- no silent zero gradients ------------------------------------------------------------------


def test_graph_escapes_raise_instead_of_returning_zeros():
    def through_numpy(x):
        return _sum(xo.tensor(np.asarray(x) ** 2))

    with pytest.raises(xo.SpecError, match="input 0 .* converted a tensor computed from it"):
        xo.grad(through_numpy)(xo.tensor([1.0, 2.0]))

    def through_python(x):
        return xo.tensor(float(x * 2.0)) * 3.0

    with pytest.raises(xo.SpecError, match="NumPy or Python"):
        xo.grad(through_python)(1.0)

    def logs(w, unused):  # float(loss) for logging; `unused` truly has a zero gradient
        loss = _sum(w * w)
        float(loss)
        return loss

    gw, gu = xo.grad(logs, argnums=(0, 1))([1.0, 2.0], [5.0])
    assert gw.tolist() == [2.0, 4.0] and gu.tolist() == [0.0]
    assert xo.grad(lambda x: xo.tensor(1.0))(2.0).item() == 0.0  # constant: zero is right


# -- pickle -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["f32", "bf16", "f8E4M3FN", "i4", "c64", "i1"])
def test_pickle_keeps_dtype_and_requires_grad(dt):
    vals = [1, 0, 1] if dt in ("i1", "i4") else [1.5, -2.0, 0.25]
    t = xo.tensor(vals, dt, requires_grad=dt in ("f32", "bf16", "c64", "f8E4M3FN"))
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is t.dtype and u.tolist() == t.tolist()
    assert u.requires_grad == t.requires_grad and u._node is None and u.grad is None


def test_pickle_quantized_and_non_leaf():
    q = xo.as_dtype("!quant.uniform<i8:f32, 0.1:-30>")
    t = xo.tensor([1, -2, 3], q)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == q and np.asarray(u).tolist() == [1, -2, 3]
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    y = pickle.loads(pickle.dumps(x * 2.0))  # a non-leaf arrives as a leaf
    assert y.requires_grad and y._node is None and y.tolist() == [2.0, 4.0]
