"""CUDA kernels of reduce_window and select_and_scatter (xops.kernels.cuda.windows), each
result checked against the CPU op on tiny shapes (the simulator runs a Python thread per
CUDA thread).

Both kernels take the CPU kernels' order (each window folded in row-major window order
from the init value; each result element combining its windows' source values in
ascending window order), so every comparison is bit for bit, floats included: ``same``
with rtol=0, plus the raw bits where NaN and signed zeros are involved.
"""

import numpy as np
import pytest

import xops as xo
import xops.nn as nn
from xops.ops._bodies import Body
from cuda_support import cu, needs_cuda, same

pytestmark = needs_cuda

rng = np.random.default_rng(17)
GE = lambda a, b: xo.compare(a, b, "GE")  # noqa: E731  (select bodies as users write them)
LT = lambda a, b: xo.compare(a, b, "LT")  # noqa: E731


def _both(op, x, *args, **kwargs):
    """op on the CUDA copy of ``x`` (and of every tensor in ``args``) and on the CPU."""
    dev = op(
        cu(x, x.dtype),
        *[cu(a, a.dtype) if isinstance(a, np.ndarray) else a for a in args],
        **kwargs,
    )
    ref = op(
        xo.tensor(x, x.dtype),
        *[xo.tensor(a, a.dtype) if isinstance(a, np.ndarray) else a for a in args],
        **kwargs,
    )
    return dev, ref


def _bits(t):
    a = t.numpy()
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _data(dtype, shape):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 3).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


# every attribute at once: strides, base and window dilations, padding (a negative edge)
FULL = dict(
    window_dimensions=[2, 3],
    window_strides=[2, 1],
    base_dilations=[2, 1],
    window_dilations=[1, 2],
    padding=[[2, 1], [2, -1]],
)
PLAIN = dict(window_dimensions=[2, 2])


def test_reduce_window_spec_example():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    dev, ref = _both(
        xo.reduce_window, x, 0, [2, 1], [4, 1], [2, 1], [3, 1], [[2, 1], [0, 0]], body=xo.add
    )
    same(dev, ref)
    assert dev.tolist() == [[0, 0], [3, 4]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_])
def test_reduce_window_bodies_and_types_match_the_cpu(dtype):
    x = _data(dtype, (3, 4))
    bodies = [xo.add, xo.maximum, xo.minimum, xo.multiply]
    if np.dtype(dtype).kind != "f":
        bodies += [xo.and_, xo.or_]
    for body in bodies:
        init = dtype(body in (xo.and_, xo.minimum, xo.multiply)) if dtype == np.bool_ else dtype(1)
        for attrs in (FULL, PLAIN):
            dev, ref = _both(xo.reduce_window, x, init, body=body, **attrs)
            same(dev, ref, rtol=0)
            np.testing.assert_array_equal(_bits(dev), _bits(ref))


def test_reduce_window_each_attribute_alone():
    x = _data(np.float32, (4, 5))
    for attrs in (
        dict(window_dimensions=[3, 2], window_strides=[1, 2]),
        dict(window_dimensions=[2, 2], base_dilations=[3, 2]),
        dict(window_dimensions=[2, 3], window_dilations=[2, 2]),
        dict(window_dimensions=[3, 3], padding=[[1, 2], [-1, 3]]),
        dict(window_dimensions=[6, 1], padding=[[1, 1], [0, 0]]),  # one window row
        dict(window_dimensions=[7, 1]),  # larger than the input: an empty result
    ):
        for body, init in ((xo.add, 0.5), (xo.maximum, -np.inf)):
            dev, ref = _both(xo.reduce_window, x, init, body=body, **attrs)
            same(dev, ref, rtol=0)


def test_reduce_window_padding_holds_the_init_value_and_init_on_the_device():
    x = _data(np.int32, (3, 3))
    attrs = dict(window_dimensions=[3, 3], padding=[[2, 2], [2, 2]], base_dilations=[2, 2])
    init = xo.tensor(7, "i32")
    dev = xo.reduce_window(cu(x, "i32"), cu(7, "i32"), body=xo.add, **attrs)
    ref = xo.reduce_window(xo.tensor(x), init, body=xo.add, **attrs)
    same(dev, ref)
    corner = 7 + 8 * 7 + int(x[0, 0])  # 8 positions of padding / holes, then x[0, 0]
    assert dev.numpy()[0, 0] == np.int32(corner)


def test_reduce_window_float_specials_bit_exact():
    x = np.array([[np.nan, 1.0, -0.0, 0.0], [0.0, -0.0, np.inf, -np.inf]], np.float32)
    for body, init in ((xo.maximum, -np.inf), (xo.minimum, np.inf), (xo.add, -0.0)):
        for attrs in (dict(window_dimensions=[1, 2]), dict(window_dimensions=[2, 2])):
            dev, ref = _both(xo.reduce_window, x, init, body=body, **attrs)
            np.testing.assert_array_equal(
                _bits(dev)[~np.isnan(ref.numpy())], _bits(ref)[~np.isnan(ref.numpy())]
            )
            np.testing.assert_array_equal(np.isnan(dev.numpy()), np.isnan(ref.numpy()))


def test_reduce_window_integer_wraparound():
    x = np.array([120, 100, -128, -100, 127], np.int8)
    dev, ref = _both(xo.reduce_window, x, np.int8(5), [3], body=xo.add)
    same(dev, ref)
    u = np.array([2**64 - 1, 2**63, 5], np.uint64)
    dev, ref = _both(xo.reduce_window, u, np.uint64(3), [2], body=xo.add)
    same(dev, ref)
    dev, ref = _both(xo.reduce_window, u, np.uint64(3), [2], body=xo.multiply)
    same(dev, ref)


def test_reduce_window_ranks_recognised_lambdas_and_empty_operands():
    s = np.array(2.5, np.float32)  # rank 0: one window, the one element
    dev, ref = _both(xo.reduce_window, s, 1.0, [], body=xo.add)
    same(dev, ref, rtol=0)
    x5 = _data(np.float32, (2, 1, 3, 2, 3))  # untouched neighbours merge: rank 3 left
    attrs = dict(window_dimensions=[1, 1, 2, 1, 2], window_strides=[1, 1, 1, 1, 2])
    dev, ref = _both(xo.reduce_window, x5, -np.inf, body=lambda a, b: xo.maximum(a, b), **attrs)
    same(dev, ref, rtol=0)
    e = np.zeros((0, 2), np.float32)  # no element: windows of padding only
    dev, ref = _both(
        xo.reduce_window, e, 3.0, [1, 1], None, None, None, [[1, 1], [0, 0]], body=xo.add
    )
    same(dev, ref, rtol=0)
    assert dev.shape == (2, 2) and dev.tolist() == [[6.0, 6.0], [6.0, 6.0]]


def _error(fn):
    with pytest.raises(xo.SpecError) as e:
        fn()
    return str(e.value)


def test_reduce_window_errors_match_the_cpu():
    x = np.ones((2, 3), np.float32)
    for args, kwargs in (
        (([2],), {}),  # C4: window_dimensions of the wrong length
        (([2, 0],), {}),  # C5
        (([1, 1], [1, 0]), {}),  # C7: a zero stride
        (([1, 1], None, [0, 1]), {}),  # C9
        (([1, 1], None, None, None, [[0, 0]]), {}),  # C12
    ):
        want = _error(lambda: xo.reduce_window(xo.tensor(x), 0.0, *args, body=xo.add, **kwargs))
        got = _error(lambda: xo.reduce_window(cu(x), 0.0, *args, body=xo.add, **kwargs))
        assert got == want and got.startswith("reduce_window (")
    # init value of another type (C3), and a CPU init with a CUDA operand
    want = _error(lambda: xo.reduce_window(xo.tensor(x), xo.tensor(0, "i32"), [1, 1], body=xo.add))
    got = _error(lambda: xo.reduce_window(cu(x), cu(0, "i32"), [1, 1], body=xo.add))
    assert got == want
    assert "different devices" in _error(
        lambda: xo.reduce_window(cu(x), xo.tensor(0.0), [1, 1], body=xo.add)
    )


def test_reduce_window_other_bodies_types_and_inputs_run_the_generic_fold():
    # the CPU's generic fold in xops ops on the device (one body call per window
    # position, in row-major order from the init values): the same results, bit for bit
    # where the body's ops are exact; a body's op that rejects the type raises its own
    # error, as on the CPU
    x = _data(np.float32, (3, 5))
    x[1, 2] = np.nan
    n = np.broadcast_to(np.arange(5, dtype=np.int64), x.shape).copy()

    def argmax(av, ai, bv, bi):
        gt, eq = xo.compare(av, bv, "GT"), xo.compare(av, bv, "EQ")
        a_wins = xo.or_(gt, xo.and_(eq, xo.compare(ai, bi, "LT")))
        return xo.select(a_wins, av, bv), xo.select(a_wins, ai, bi)

    fused = lambda a, b: xo.add(a, xo.multiply(a, b))  # noqa: E731
    for body, init in ((fused, 0.5), (xo.subtract, 1.0)):
        for kw in (PLAIN, FULL):
            dev, ref = _both(xo.reduce_window, x, init, body=body, **kw)
            assert dev.device == "cuda:0"
            np.testing.assert_array_equal(_bits(dev), _bits(ref))
    for kw in (PLAIN, FULL):
        dev = xo.reduce_window([cu(x), cu(n)], [-np.inf, 0], body=argmax, **kw)
        ref = xo.reduce_window([xo.tensor(x), xo.tensor(n)], [-np.inf, 0], body=argmax, **kw)
        for d, r in zip(dev, ref):
            np.testing.assert_array_equal(_bits(d), _bits(r))
    i4 = xo.tensor(_data(np.int8, (3, 5)) % 8, "i4")  # (sub-byte: i4's own adds, wrapping)
    init4 = xo.tensor(3, "i4")
    dev = xo.reduce_window(i4.to("cuda"), init4.to("cuda"), [2, 2], body=xo.add)
    ref = xo.reduce_window(i4, init4, [2, 2], body=xo.add)
    assert dev.device == "cuda:0"
    np.testing.assert_array_equal(dev.numpy(), ref.numpy())
    cpu = _error(lambda: xo.reduce_window(xo.tensor(x), 0.0, [1, 2], body=xo.and_))
    assert cpu.startswith("and (I1)")
    assert _error(lambda: xo.reduce_window(cu(x), 0.0, [1, 2], body=xo.and_)) == cpu

    # a body's gradient on the device (the rule re-runs the fold on the tape)
    def f(t):
        s = xo.reduce_window(t, 0.0, [2, 2], body=lambda a, b: xo.add(a, xo.multiply(b, b)))
        return xo.reduce(s, 0.0, [0, 1], xo.add)

    dev, ref = xo.grad(f)(cu(x)), xo.grad(f)(xo.tensor(x))
    assert dev.device == "cuda:0"
    np.testing.assert_array_equal(_bits(dev), _bits(ref))
    deep = np.ones([1] * 9, np.float32)
    many = _error(
        lambda: xo.reduce_window(
            cu(deep), 0.0, [1] * 9, None, None, None, [[0, 1]] * 9, body=xo.add
        )
    )
    assert "more than 8 dimensions" in many


# -- select_and_scatter ------------------------------------------------------------------


def test_select_and_scatter_spec_example():
    x = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64)
    src = np.array([[5, 6], [7, 8]], np.int64)
    dev, ref = _both(
        xo.select_and_scatter,
        x,
        src,
        0,
        [3, 1],
        [2, 1],
        [[0, 1], [0, 0]],
        select=GE,
        scatter=xo.add,
    )
    same(dev, ref)
    assert dev.tolist() == [[0, 0], [0, 0], [5, 14], [7, 0]]


@pytest.mark.parametrize("direction", ["GE", "GT", "LE", "LT", "EQ", "NE"])
def test_select_and_scatter_directions_with_ties_and_overlaps(direction):
    x = rng.integers(0, 3, (5, 4)).astype(np.int32)  # many ties
    select = Body.compare(direction)
    for wd, ws, pad in (([2, 3], [1, 1], [[0, 0], [0, 0]]), ([3, 2], [2, 1], [[1, 1], [1, -1]])):
        n = [(p + lo + hi - w) // s + 1 for p, w, s, (lo, hi) in zip(x.shape, wd, ws, pad)]
        src = rng.integers(-50, 50, n).astype(np.int32)
        dev, ref = _both(
            xo.select_and_scatter, x, src, 3, wd, ws, pad, select=select, scatter=xo.add
        )
        same(dev, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.bool_])
def test_select_and_scatter_types_and_scatter_bodies(dtype):
    x = _data(dtype, (4, 5))
    wd, ws, pad = [3, 3], [1, 2], [[1, 1], [1, 1]]
    src = _data(dtype, (4, 3))
    bodies = [xo.add, xo.maximum, xo.multiply]
    for scatter in bodies:
        for select in (GE, LT):
            init = np.zeros((), dtype)[()]
            dev, ref = _both(
                xo.select_and_scatter, x, src, init, wd, ws, pad, select=select, scatter=scatter
            )
            same(dev, ref, rtol=0)


def test_select_and_scatter_nan_and_padding_only_windows():
    x = np.array([[1.0, np.nan, 2.0], [np.nan, 0.5, 3.0]], np.float32)
    # windows 1x2 stride 1 with one column of padding each side: the edge windows hold one
    # element; a NaN candidate replaces the pick and a NaN pick is replaced. Then 1x1
    # windows with padding: those that lie wholly in padding scatter nothing.
    for n, wd, pad in (((2, 4), [1, 2], [[0, 0], [1, 1]]), ((3, 5), [1, 1], [[1, 0], [1, 1]])):
        src = np.arange(1, 1 + n[0] * n[1], dtype=np.float32).reshape(n)
        dev, ref = _both(
            xo.select_and_scatter, x, src, 0.0, wd, [1, 1], pad, select=GE, scatter=xo.add
        )
        same(dev, ref, rtol=0)
    s = np.array(4.0, np.float32)  # rank 0
    dev, ref = _both(
        xo.select_and_scatter, s, np.array(2.0, np.float32), 1.0, select=GE, scatter=xo.add
    )
    same(dev, ref, rtol=0)
    assert dev.item() == 3.0


def test_select_and_scatter_errors_match_the_cpu():
    x = np.ones((4, 4), np.float32)
    src = np.ones((2, 2), np.float32)
    for args in (
        ([2, 2], [2, 2], [[0, 0]]),  # C8: padding of the wrong length
        ([2, 2], [1, 1], None),  # C2: source has not one element per window
        ([2], [2, 2], None),  # C4
    ):
        want = _error(
            lambda: xo.select_and_scatter(
                xo.tensor(x), xo.tensor(src), 0.0, *args, select=GE, scatter=xo.add
            )
        )
        got = _error(
            lambda: xo.select_and_scatter(cu(x), cu(src), 0.0, *args, select=GE, scatter=xo.add)
        )
        assert got == want and got.startswith("select_and_scatter (")
    want = _error(
        lambda: xo.select_and_scatter(
            xo.tensor(x), xo.tensor(src, "f64"), 0.0, [2, 2], [2, 2], select=GE, scatter=xo.add
        )
    )
    got = _error(
        lambda: xo.select_and_scatter(
            cu(x), cu(src, "f64"), 0.0, [2, 2], [2, 2], select=GE, scatter=xo.add
        )
    )
    assert got == want and "(C1)" in got
    # a scatter body the kernel does not take (once a "no cuda kernel" error): the CPU's
    # rounds on the device (tests/test_cuda_scatter_generic.py), the CPU's result
    twice = lambda a, b: xo.add(a, a)  # noqa: E731
    dev, ref = _both(xo.select_and_scatter, x, src, 0.5, [2, 2], [2, 2], select=GE, scatter=twice)
    assert dev.device == "cuda:0"
    np.testing.assert_array_equal(_bits(dev), _bits(ref))


def test_select_and_scatter_any_select_body_runs_the_generic_selection():
    # the CPU's running pick in xops ops on the device (one select call per window
    # position), then one scatter: bit for bit as the CPU, padding never a candidate,
    # NaN and signed zeros decided by the body as there
    x = rng.integers(0, 4, (5, 6)).astype(np.float32)
    x[1, 1], x[2, 3], x[4, 0] = np.nan, -0.0, 0.0
    wd, ws, pad = [3, 2], [2, 1], [[1, 1], [1, 0]]
    n = [(p + lo + hi - w) // s + 1 for p, w, s, (lo, hi) in zip(x.shape, wd, ws, pad)]
    src = rng.standard_normal(n).astype(np.float32)

    def helper_ge(a, b):  # a comparator written as a helper call
        return xo.compare(a, b, "GE")

    selects = (
        lambda a, b: xo.compare(b, a, "GE"),  # operands swapped
        lambda a, b: xo.compare(a, b, "GE", "TOTALORDER"),
        lambda a, b: helper_ge(a, b),
        lambda a, b: xo.not_(xo.compare(a, b, "LT")),
    )
    for select in selects:
        for scatter in (xo.add, xo.maximum):
            dev, ref = _both(
                xo.select_and_scatter, x, src, 0.5, wd, ws, pad, select=select, scatter=scatter
            )
            assert dev.device == "cuda:0"
            np.testing.assert_array_equal(_bits(dev), _bits(ref))
    i4 = xo.tensor(rng.integers(-8, 8, (4, 4)), "i4")  # (selected and scattered
    s4 = xo.tensor(np.ones((2, 2)), "i4")  # generically: no kernel takes i4)
    zero = xo.tensor(0, "i4")
    dev = xo.select_and_scatter(
        i4.to("cuda"), s4.to("cuda"), zero.to("cuda"), [2, 2], [2, 2], select=GE, scatter=xo.add
    )
    ref = xo.select_and_scatter(i4, s4, zero, [2, 2], [2, 2], select=GE, scatter=xo.add)
    assert dev.device == "cuda:0" and dev.dtype == ref.dtype
    np.testing.assert_array_equal(dev.numpy(), ref.numpy())


# -- max pooling on the device: forward and backward ---------------------------------------


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 2, 1)])
def test_max_pool_forward_and_backward_match_the_cpu(kernel, stride, padding):
    x = rng.permutation(2 * 2 * 6 * 6).reshape(2, 2, 6, 6).astype(np.float32) / 7  # distinct
    pool = nn.MaxPool2d(kernel, stride, padding)
    xc = xo.tensor(x, requires_grad=True)
    xg = cu(x)
    xg.requires_grad = True
    yc, yg = pool(xc), pool(xg)
    same(yg, yc, rtol=0)
    (yc * yc).sum().backward()
    (yg * yg).sum().backward()
    assert xg.grad.device == "cuda:0"
    same(xg.grad, xc.grad, rtol=0)


def test_reduce_window_add_gradient_on_the_device():
    x = _data(np.float32, (4, 5))

    def f(t):
        y = xo.reduce_window(t, 0.0, [2, 3], [2, 1], None, [1, 1], [[1, 0], [0, 1]], body=xo.add)
        return xo.reduce(y * y, 0.0, [0, 1], xo.add)

    gc = xo.grad(f)(xo.tensor(x))
    gg = xo.grad(f)(cu(x))
    same(gg, gc)


def test_dilated_max_pool_and_other_init_gradients_on_the_device():
    # these take the running-pick rule (no select_and_scatter): its constants live on the
    # operand's device
    x = rng.permutation(25).reshape(1, 1, 5, 5).astype(np.float32)
    pool = nn.MaxPool2d(2, 1, 0, dilation=2)
    xc = xo.tensor(x, requires_grad=True)
    xg = cu(x)
    xg.requires_grad = True
    (pool(xc) * 1.5).sum().backward()
    (pool(xg) * 1.5).sum().backward()
    same(xg.grad, xc.grad, rtol=0)

    def f(t):
        y = xo.reduce_window(t, 12.0, [2, 2], [1, 1], body=xo.maximum)  # init 12: some win
        return xo.reduce(y * y, 0.0, [0, 1], xo.add)

    same(xo.grad(f)(cu(x[0, 0])), xo.grad(f)(xo.tensor(x[0, 0])), rtol=0)


def test_window_layouts_kept_per_signature_serve_later_calls(monkeypatch):
    """The merged window layout is worked out once per signature (op, shapes, window
    attributes); later calls with new data, and a call that differs only in padding or
    strides, each give the CPU's bits."""
    from xops.kernels.cuda import windows as W

    monkeypatch.setattr(W, "_layouts", {})  # (other tests' signatures: not counted)

    rng = np.random.default_rng(9)
    for pad, strides in [
        ([(0, 0), (1, 0)], [2, 2]),
        ([(0, 0), (1, 0)], [2, 2]),
        ([(1, 1)] * 2, [1, 2]),
    ]:
        x = rng.standard_normal((5, 6)).astype(np.float32)
        attrs = ([2, 3], strides, None, None, pad)
        same(
            xo.reduce_window(cu(x), -np.inf, *attrs, body=xo.maximum),
            xo.reduce_window(xo.tensor(x), -np.inf, *attrs, body=xo.maximum),
        )
        src_shape = xo.reduce_window(xo.tensor(x), 0.0, *attrs, body=xo.add).shape
        s = rng.standard_normal(src_shape).astype(np.float32)
        sel, scat = Body.compare("GE"), xo.add
        same(
            xo.select_and_scatter(
                cu(x), cu(s), 0.0, [2, 3], strides, pad, select=sel, scatter=scat
            ),
            xo.select_and_scatter(
                xo.tensor(x), xo.tensor(s), 0.0, [2, 3], strides, pad, select=sel, scatter=scat
            ),
        )
    kept = [k for k in W._layouts if k[1] == (5, 6)]
    assert len({k[0] for k in kept}) == 2 and len(kept) == 4  # (two signatures per op)
