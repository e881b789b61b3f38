"""NumPy-style indexing (basic + advanced + masks), ``.at[]`` functional updates,
``t[idx] = v`` (copy-on-write) and the version counter, all checked against NumPy and
finite differences."""

import numpy as np
import pytest
from conftest import assert_tensor
from gradcheck import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import xops as xo
import xops.numpy as xnp


def _sum(t):
    return xo.reduce(t, xo.tensor(0, t.dtype), list(range(t.ndim)), xo.add)


# -- a strategy for NumPy keys: basic and advanced, in every combination ----------------


@st.composite
def _keys(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    key, d = [], 0
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    bshape = draw(st.sampled_from([(), (2,), (3,), (2, 1), (1, 3)]))
    while d < rank and draw(st.integers(0, 4)):
        n = shape[d]
        kind = draw(
            st.sampled_from(["int", "slice", "array", "list", "tensor", "mask", "none", "i32"])
        )
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 1, n + 1)
            key.append(
                slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1, -2, 3])))
            )
        elif kind in ("array", "list", "tensor", "i32"):
            idx = rng.integers(-n, n, size=bshape)
            key.append(
                idx
                if kind == "array"
                else idx.tolist()
                if kind == "list" and idx.ndim
                else xo.tensor(idx.astype(np.int32), "i32")
                if kind == "i32"
                else xo.tensor(idx)
            )
        elif kind == "mask":
            k = draw(st.integers(1, rank - d))
            key.append(rng.random(shape[d : d + k]) < 0.5)
            d += k - 1
        else:
            key.append(None)
            continue
        d += 1
    if draw(st.booleans()) and len(key):
        key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return shape, tuple(key)


def _np_key(key):
    return tuple(np.asarray(k) if isinstance(k, xo.Tensor) else k for k in key)


@settings(max_examples=300, deadline=None)
@given(_keys())
def test_getitem_matches_numpy(case):
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    try:
        want = a[_np_key(key)]
    except IndexError:
        with pytest.raises(IndexError):
            xo.tensor(a)[key]
        return
    assert_tensor(xo.tensor(a)[key], want, "f32")


@settings(max_examples=150, deadline=None)
@given(_keys(), st.sampled_from(["set", "add", "multiply", "min", "max"]))
def test_at_updates_match_numpy(case, how):
    shape, key = case
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    nk = _np_key(key)
    try:
        sel = a[nk]
    except IndexError:
        return
    v = rng.standard_normal(sel.shape).astype(np.float32)
    want = a.copy()
    if how == "set":
        want[nk] = v  # NumPy: the last of duplicate indices wins, as in xops
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[how].at(
            want, nk, v
        )
    got = getattr(xo.tensor(a).at[key], how)(xo.tensor(v))
    assert_tensor(got, want, "f32")
    t = xo.tensor(a)
    if how == "set":
        t[key] = v  # setitem: the same values, t rebound
        assert_tensor(t, want, "f32")


def test_numpy_placement_of_advanced_dims():
    a = np.arange(120.0).reshape(2, 3, 4, 5)
    t = xo.tensor(a)
    cases = [
        (slice(None), [0, 1], [1, 2]),  # adjacent: in place
        ([0, 1], slice(None), [1, 2]),  # separated by a slice: first
        (0, slice(None), [1, 2]),  # an int is an advanced index next to an array
        ([0], None, [0]),  # None separates too
        (Ellipsis, [[1], [2]], [0, 3]),  # broadcasting index arrays
        (None, [0, 1], None),
        (True,),
        (False,),
        (slice(None), a[0, :, :, 0] > 50),
    ]
    for k in cases:
        assert_tensor(t[k], a[k])


def test_index_types_and_element_types():
    a = np.arange(12).reshape(3, 4)
    for dt in ["i32", "bf16", "i4", "c64", "i1", "f8E4M3FN"]:
        t = xo.tensor(a % 7 if dt != "i1" else a % 2, dt)
        want = np.asarray(t)
        for k in [
            ([2, 0],),
            (xo.tensor([1, 1], "ui8"), slice(None, None, -1)),
            (np.array([True, False, True]),),
            (xo.tensor(a % 2 == 0),),
            ([], 0),
        ]:
            nk = tuple(np.asarray(i) if isinstance(i, xo.Tensor) else i for i in k)
            got = t[k]
            assert got.dtype == t.dtype and np.array_equal(np.asarray(got), want[nk])


def test_indexing_errors_are_clear():
    t = xo.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        t[:, [0, 3]]
    with pytest.raises(IndexError, match="index -3 is out of bounds for axis 0 with size 2"):
        t[[-3]]
    with pytest.raises(IndexError, match="axis 0 with size 2"):
        t[2]
    with pytest.raises(xo.SpecError, match="out of bounds"):  # also an xops SpecError
        t.at[[5]].set(1.0)
    with pytest.raises(
        IndexError,
        match="boolean index did not match.*axis 1.*size of axis "
        "is 3 but size of corresponding boolean axis is 2",
    ):
        t[np.ones((2, 2), bool)]
    with pytest.raises(IndexError, match="could not be broadcast"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="integer or boolean"):
        t[xo.tensor([0.0])]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(xo.SpecError, match="could not broadcast value f32\\[4\\]"):
        t.at[0].set(xo.tensor([1.0, 2.0, 3.0, 4.0]))


def test_empty_selections():
    a = np.arange(6.0).reshape(2, 3)
    t = xo.tensor(a)
    assert_tensor(t[[]], a[[]])
    assert_tensor(t[:, []], a[:, []])
    assert_tensor(xo.tensor(np.zeros((0, 3)))[[]], np.zeros((0, 3)))
    assert_tensor(t[a > 100], a[a > 100])
    assert_tensor(t.at[[]].add(1.0), a)


# -- duplicates and gradients ------------------------------------------------------------


def test_duplicate_indices():
    t = xo.tensor([0.0, 1.0, 2.0])
    assert t.at[[0, 0, 2]].set([5.0, 6.0, 7.0]).tolist() == [6.0, 1.0, 7.0]  # last wins
    assert t.at[[0, 0, 2]].add(1.0).tolist() == [2.0, 1.0, 3.0]  # accumulates
    assert t.at[[1, 1]].multiply(3.0).tolist() == [0.0, 9.0, 2.0]
    assert t.at[[1, 1]].max(xo.tensor([7.0, 9.0])).tolist() == [0.0, 9.0, 2.0]
    assert t.at[[1, 1]].min(xo.tensor([7.0, -9.0])).tolist() == [0.0, -9.0, 2.0]
    assert t.at[1:].get().tolist() == [1.0, 2.0]
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    _sum(x[[0, 0, 1]]).backward()
    assert x.grad.tolist() == [2.0, 1.0, 0.0]  # gather's gradient is a scatter-add


@pytest.mark.parametrize("how", ["set", "add", "multiply", "min", "max"])
def test_at_gradients(how):
    rng = np.random.default_rng(3)

    def f(x, v):
        return getattr(x.at[[0, 2, 0, 4], 1:], how)(v)

    check_grads(f, [rng.standard_normal((5, 3)), rng.standard_normal((4, 2))], order=2)


def test_getitem_gradients():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 2))
    check_grads(lambda t: t[[[0, 1], [2, 2]], ::-1, None], [x], order=2)
    check_grads(lambda t: t[x > 0], [x], order=2)
    check_grads(lambda t: t[1, :, [1, 0, 1]], [x], order=2)
    check_grads(lambda t: t[..., -1][::2], [x])


# -- t[idx] = v: copy-on-write, the tape and versions -------------------------------------


def test_setitem_is_copy_on_write():
    t = xo.tensor([1.0, 2.0, 3.0])
    same = t
    view, det, host = t[:], t.detach(), np.asarray(t)
    rev = t[::-1]
    t[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0] and same is t  # the object is rebound
    assert view.tolist() == [1.0, 2.0, 3.0] and det.tolist() == [1.0, 2.0, 3.0]
    assert host.tolist() == [1.0, 2.0, 3.0] and rev.tolist() == [3.0, 2.0, 1.0]
    t[t > 2.5] = 0.0
    t[[1, 1]] += 5.0  # NumPy semantics: read, add, write (duplicates: once)
    assert t.tolist() == [0.0, 7.0, 0.0]
    i = xo.tensor([1, 2], "i8")
    i[0] = 100
    assert i.tolist() == [100, 2] and i.dtype == xo.int8
    i[1] = 3.7  # converted to the tensor's type with xo.convert
    assert i.tolist() == [100, 3]


def test_setitem_records_on_the_tape():
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y[1] = x[0] * 10  # y is an op's output: the update is recorded over its history
    _sum(y).backward()
    assert x.grad.tolist() == [12.0, 0.0, 2.0]
    z = xo.zeros([3], "f32") if hasattr(xo, "zeros") else xo.tensor([0.0, 0.0, 0.0])
    w = xo.tensor([4.0], requires_grad=True)
    z[2:] = w * w  # a tensor that does not require a gradient takes one on
    assert z.requires_grad
    _sum(z).backward()
    assert w.grad.tolist() == [8.0]


def test_leaf_assignment_like_pytorch():
    x = xo.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(xo.SpecError, match="leaf tensor that requires a gradient"):
        x[0] = 5.0
    with xo.no_grad():
        x[0] = 5.0  # allowed: an optimiser-style update; x stays a leaf
    assert x.tolist() == [5.0, 2.0] and x.requires_grad and x._node is None


def test_nodes_recorded_before_an_assignment_see_the_old_value():
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    z = y * y  # multiply saw y = x; y's old value and history are kept for it
    y[0] = 5.0
    _sum(z + y).backward()  # d/dx [sum(x^2) + (5 + x1 + x2)] = 2x + [0, 1, 1]
    assert x.grad.tolist() == [2.0, 5.0, 7.0]
    x.grad = None
    y = x * 2.0
    y[1:] += x[:2]  # PyTorch-style in-place on an op output: read, add, write
    _sum(y * y).backward()  # y = [2x0, 2x1 + x0, 2x2 + x1]
    a, b, c = 2.0, 2 * 2.0 + 1.0, 2 * 3.0 + 2.0
    assert x.grad.tolist() == [2 * a * 2 + 2 * b, 2 * b * 2 + 2 * c, 2 * c * 2]


def test_backward_after_assignment_raises():
    w = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = xo.tensor([1.0, 1.0, 1.0])
    loss = _sum(w * c)  # multiply saved the constant c (version 0)
    c[0] = 5.0  # nothing on the tape holds c's old value
    with pytest.raises(
        xo.SpecError,
        match=r"modified by an assignment: multiply saved "
        r"f32\[3\] at version 0, now version 1",
    ):
        loss.backward()
    p = xo.tensor([1.0, 2.0], requires_grad=True)
    loss = _sum(p * p)
    with xo.no_grad():
        xo.nn.assign_(p, p - 0.1)  # an optimiser step before backward
    with pytest.raises(xo.SpecError, match="modified by an assignment"):
        loss.backward()
    y = p * 1.0
    with xo.no_grad():
        y[1] = 0.0  # an op output assigned under no_grad: its history is stale
    with pytest.raises(xo.SpecError, match="now version 1"):
        _sum(y).backward()


# -- JAX's out-of-bounds modes on .at[] ---------------------------------------------------


def test_at_modes_match_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    t, j = xo.tensor(a), jnp.asarray(a)
    keys = [
        ([0, 7, -2, -9],),
        (slice(None), [1, 9]),
        ([[0], [6]], [1, 2, -7]),
        (5,),
        (1, 9),
        ([0, 4], slice(1, None)),
        (np.array([3, -5]), [4, 4]),
        (2,),
    ]
    for k in keys:
        for mode in ["clip", "drop", "fill"]:
            got = t.at[k].get(mode=mode, fill_value=-1.0)
            assert_tensor(got, np.asarray(j.at[k].get(mode=mode, fill_value=-1.0)))
        assert np.isnan(np.asarray(t.at[[9]].get(mode="fill"))).all()  # JAX's default fill
        sel = np.asarray(j.at[k].get(mode="fill", fill_value=0.0))
        v = rng.standard_normal(sel.shape).astype(np.float32)
        for how in ["set", "add", "multiply", "min", "max"]:
            for mode in ["clip", "drop"]:
                got = getattr(t.at[k], how)(v, mode=mode)
                assert_tensor(
                    got, np.asarray(getattr(j.at[k], how)(v, mode=mode)), exact=False, rtol=1e-6
                )
    with pytest.raises(IndexError, match="out of bounds"):
        t.at[[7]].get()  # the default (NumPy's): an error, never a silent clamp
    with pytest.raises(ValueError, match="mode must be"):
        t.at[0].get(mode="wrap")


def test_at_drop_mode_gradients():
    rng = np.random.default_rng(6)
    check_grads(
        lambda x, v: x.at[[0, 9, 2, 0]].multiply(v, mode="drop"),
        [rng.standard_normal(5), rng.standard_normal(4)],
    )
    check_grads(
        lambda x: x.at[[0, 9, 2]].get(mode="fill", fill_value=0.5), [rng.standard_normal(5)]
    )


# -- results that keep the value are new objects: an assignment never shows through -------

_UNCHANGED = {  # name -> a method / property / operator that returns the same value
    "T (1-D)": lambda t: t.T,
    "T (0-d)": lambda t: t.T,
    "real": lambda t: t.real,
    "to_device": lambda t: t.to_device("cpu"),
    "to(cpu)": lambda t: t.to("cpu"),
    "to(same dtype)": lambda t: t.to(t.dtype),
    "+t": lambda t: +t,
    "reshape(shape)": lambda t: t.reshape(t.shape),
    "view": lambda t: t.view(t.shape),
    "flatten (1-D)": lambda t: t.flatten(),
    "squeeze": lambda t: t.squeeze(),
    "transpose(0, 0)": lambda t: t.transpose(0, 0),
    "permute (identity)": lambda t: t.permute(tuple(range(t.ndim))),
    "clip()": lambda t: t.clip(),
    "astype(same, copy=False)": lambda t: t.astype(t.dtype, copy=False),
    "conj (real)": lambda t: t.conj(),
    "sum(axis=())": lambda t: t.sum(axis=()),
    "max (0-d)": lambda t: t.max(),
}


@pytest.mark.parametrize("name", list(_UNCHANGED))
def test_unchanged_values_are_new_objects(name):
    form = _UNCHANGED[name]
    data = np.array(2.0) if "0-d" in name else np.arange(1.0, 4.0)
    shape = data.shape
    t = xo.tensor(data)
    u = form(t)
    assert u is not t and u.dtype == t.dtype and u.shape == t.shape
    before = np.asarray(t).copy()
    t[...] = 7.0  # rebinds t's buffer; u was computed before and keeps the old value
    np.testing.assert_array_equal(np.asarray(u), before)
    assert np.asarray(t).tolist() == np.full(shape, 7.0).tolist()
    # gradients flow through the new object as through the value
    x = xo.tensor(data, requires_grad=True)
    g = xo.grad(lambda x: _sum(form(x) * form(x)))(x)
    np.testing.assert_array_equal(np.asarray(g), 2 * np.asarray(x))
    y = x * 3.0
    v = form(y)
    y[...] = 0.0  # recorded over y's history; v keeps the old value and its history
    _sum(v * y + v).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), np.full(shape, 3.0))


def test_unsigned_abs_and_integer_round_are_new_objects():
    i = xo.tensor([1, 2], "ui8")
    forms = [abs(i), i.abs(), i.round(), round(i), i.clip(), +i]
    i[0] = 9
    for u in forms:
        assert u is not i and u.tolist() == [1, 2] and u.dtype == xo.uint8


_XNP_UNCHANGED = {
    "reshape": lambda t: xnp.reshape(t, t.shape),
    "permute_dims": lambda t: xnp.permute_dims(t, (0, 1)),
    "squeeze": lambda t: xnp.squeeze(t, ()),
    "flip": lambda t: xnp.flip(t, axis=()),
    "moveaxis": lambda t: xnp.moveaxis(t, 0, 0),
    "positive": lambda t: xnp.positive(t),
    "clip": lambda t: xnp.clip(t),
    "conj": lambda t: xnp.conj(t),
    "real": lambda t: xnp.real(t),
    "astype": lambda t: xnp.astype(t, t.dtype, copy=False),
    "sum": lambda t: xnp.sum(t, axis=()),
    "max": lambda t: xnp.max(t, axis=()),
    "min": lambda t: xnp.min(t, axis=()),
    "round": lambda t: xnp.round(t),
    "floor": lambda t: xnp.floor(t),
    "abs": lambda t: xnp.abs(t),
    "broadcast_to": lambda t: xnp.broadcast_to(t, t.shape),
    "broadcast_arrays": lambda t: xnp.broadcast_arrays(t, t)[1],
    "concat": lambda t: xnp.concat([t]),
}


@pytest.mark.parametrize("name", sorted(_XNP_UNCHANGED))
def test_namespace_functions_never_hand_back_their_input(name):
    """xops.numpy functions that leave a value unchanged return a new object, so that a
    later `t[...] = v` (which rebinds the object t) cannot change the earlier result."""
    t = xnp.asarray([[1, 2], [3, 4]], dtype=xnp.int32)
    u = _XNP_UNCHANGED[name](t)
    assert u is not t
    t[0, 0] = 9
    assert u.tolist() == [[1, 2], [3, 4]] and t.tolist() == [[9, 2], [3, 4]]


def test_index_arrays_broadcasting_to_nothing_are_not_bounds_checked():
    """NumPy checks the bounds of index arrays only where they select something (found by
    hypothesis: a[..., [[0], [1]], [False]] of a (2, 1, 1, 1) array is empty); integer
    scalars are always checked."""
    a = np.arange(2.0).reshape(2, 1, 1, 1)
    key = (Ellipsis, np.array([[0], [1]]), np.array([False]))
    assert xo.tensor(a)[key].shape == a[key].shape == (2, 1, 2, 0)
    assert_tensor(xo.tensor(a).at[key].set(xo.tensor(np.zeros((2, 1, 2, 0)))), a, "f64")
    b = np.zeros((2, 3))
    assert xo.tensor(b)[np.array([[5]]), np.array([], int)].shape == (1, 0)
    with pytest.raises(IndexError, match="out of bounds"):
        xo.tensor(b)[5, np.array([], int)]
    with pytest.raises(IndexError, match="out of bounds"):
        xo.tensor(b)[np.array([9]), :]
